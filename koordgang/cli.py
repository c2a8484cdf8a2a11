"""Command line: ``koordgang run`` (the daemon) and ``koordgang version``."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version

from koordgang.cli_config import (
    DURATIONS,
    OPTIONS,
    SettingsError,
    default_of,
    metavar_of,
    parse_flag,
    read_env,
    read_file,
    resolve,
)
from koordgang.settings import Settings

DESCRIPTION = """\
koordgang schedules the pods that ask for it (spec.schedulerName) with gang semantics:
all members of a gang are bound together or none is. Every other pod in the cluster is
watched too, because it uses node capacity."""

EPILOG = f"""\
Every setting can come from a --config file, from the environment variable shown in
brackets, or from its flag; a flag wins over the environment, the environment over the file.
{textwrap.fill(f"A DURATION, in all three alike, is {DURATIONS}.", 92)}

examples:
  koordgang run                                  # in a cluster, with its service account
  koordgang run --kubeconfig .cluster/kubeconfig --log-format console
  KOORDGANG_SCORE_STRATEGY=MostAllocated koordgang run   # binpack, for GPU clusters
"""


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _package_version() -> str:
    try:
        return version("koordgang")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="koordgang",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the scheduler daemon",
        description="Run the scheduler until SIGTERM or SIGINT (binds in flight then finish).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--config",
        metavar="FILE",
        help="a YAML file of settings (keys: "
        + ", ".join(option.key for option in OPTIONS)
        + "); the environment and flags override it [KOORDGANG_CONFIG]",
    )
    for option in OPTIONS:
        run.add_argument(
            option.flag,
            dest=option.field,
            metavar=metavar_of(option),
            default=None,
            help=f"{option.help} [{option.env}] (default: {default_of(option)})",
        )
    gangs = commands.add_parser(
        "gangs",
        help="list the gangs and why each waits",
        description="Prints one line per gang: its GangGroup partners, mode, min-available, "
        "members created / placed (reserved or bound) / bound, state, domain and what it waits "
        "for. From a running daemon's /gangs (--url), or, with --kubeconfig or --from-cluster, "
        "from the API server directly (no access to the daemon needed; this is what "
        "`kubectl koordgang gangs` runs).",
    )
    gangs.add_argument(
        "--kubeconfig", help="read the gangs from the API server with this kubeconfig"
    )
    gangs.add_argument(
        "--from-cluster",
        action="store_true",
        help="read the gangs from the API server with the default kubeconfig ($KUBECONFIG, "
        "then ~/.kube/config)",
    )
    gangs.add_argument(
        "--scheduler-name",
        default=_env("KOORDGANG_SCHEDULER_NAME", "koord-scheduler"),
        help="with --kubeconfig/--from-cluster: whose pods [KOORDGANG_SCHEDULER_NAME] "
        "(default: %(default)s)",
    )
    gangs.add_argument(
        "--url",
        default=_env("KOORDGANG_URL", "http://127.0.0.1:10251"),
        help="the daemon's HTTP address [KOORDGANG_URL] (default: %(default)s)",
    )
    gangs.add_argument(
        "-o", "--output", choices=["table", "json"], default="table", help="(default: %(default)s)"
    )
    commands.add_parser("version", help="print the version")
    return parser


def settings_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> Settings:
    """Defaults, then the ``--config`` file, then the environment, then flags."""
    environ = os.environ if environ is None else environ
    path = args.config or environ.get("KOORDGANG_CONFIG")
    from_file = read_file(path) if path else {}
    flags = {
        option.field: parse_flag(option, getattr(args, option.field))
        for option in OPTIONS
        if getattr(args, option.field, None) is not None
    }
    return resolve(from_file, read_env(environ), flags)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"koordgang {_package_version()}")
        return 0
    if args.command == "gangs":
        from koordgang.gangs_view import ViewError, fetch, from_cluster, render_table

        try:
            if args.kubeconfig or args.from_cluster:
                gangs = from_cluster(args.kubeconfig, args.scheduler_name)
            else:
                gangs = fetch(args.url)
        except ViewError as error:
            print(f"koordgang: {error}", file=sys.stderr)
            return 1
        if args.output == "json":
            import json

            print(json.dumps(gangs, indent=2))
        else:
            print(render_table(gangs))
        return 0
    try:
        settings = settings_from_args(args)
    except SettingsError as error:
        print(f"koordgang: {error}", file=sys.stderr)
        return 2
    from koordgang.app import run  # late: keeps `--help` fast
    from koordgang.clients.config import ConfigError
    from koordgang.logs import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    try:
        return run(settings)
    except ConfigError as error:
        print(f"koordgang: {error}", file=sys.stderr)
        return 2


def kubectl_main() -> int:
    """``kubectl koordgang gangs ...`` (this program installed as ``kubectl-koordgang``):
    the gangs read from the API server with kubectl's kubeconfig."""
    argv = sys.argv[1:]
    if not argv or argv[0] != "gangs":
        print("usage: kubectl koordgang gangs [-o table|json]", file=sys.stderr)
        return 2
    if "--kubeconfig" not in argv:
        argv = [*argv, "--from-cluster"]
    return main(argv)


if __name__ == "__main__":
    sys.exit(main())
