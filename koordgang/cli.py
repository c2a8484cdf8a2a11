"""Command line: ``koordgang run`` (the daemon), ``gangs``, ``whatif`` and ``version``."""

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
    scheduler_names,
)
from koordgang.settings import LogFormat, Settings

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
            action="append" if option.repeatable else "store",
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
        help="with --kubeconfig/--from-cluster: whose pods, one name or several separated by "
        "commas [KOORDGANG_SCHEDULER_NAME] (default: %(default)s)",
    )
    gangs.add_argument(
        "--url",
        default=_env("KOORDGANG_URL", "http://127.0.0.1:10251"),
        help="the daemon's HTTP address [KOORDGANG_URL] (default: %(default)s)",
    )
    gangs.add_argument(
        "--all",
        action="store_true",
        dest="with_basic",
        help="also list upstream PodGroups of the basic policy (not gangs: from Kubernetes 1.37 "
        "every Job has one, and its pods are scheduled one by one); their MODE reads basic",
    )
    gangs.add_argument(
        "-o", "--output", choices=["table", "json"], default="table", help="(default: %(default)s)"
    )
    _add_whatif(commands)
    commands.add_parser("version", help="print the version")
    return parser


WHATIF_EPILOG = """\
exit status: 0 answered (whether it fits or not), 2 the file cannot be answered for (the
message names the document and the field), 1 the daemon or the API server could not be asked.

examples:
  koordgang whatif -f job.yaml                   # asks the daemon on 127.0.0.1:10251
  koordgang whatif -f job.yaml -o json
  kubectl koordgang whatif -f job.yaml           # from the API server, with kubectl's kubeconfig
"""


def _add_whatif(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    whatif = commands.add_parser(
        "whatif",
        help="what would happen to a job if it were submitted now",
        description="Reads Pods, Jobs, Deployments, ReplicaSets or StatefulSets and the gang "
        "objects they name, and says whether they would fit now, on which nodes (and in which "
        "network-topology domain), what is short if not, and whom preemption would evict. "
        "Worked out on a copy of the scheduler's state: nothing is created or changed.",
        epilog=WHATIF_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    whatif.add_argument(
        "-f", "--filename", required=True, help="the YAML or JSON file ('-': standard input)"
    )
    whatif.add_argument(
        "--server",
        default=_env("KOORDGANG_URL", "http://127.0.0.1:10251"),
        help="the daemon's HTTP address [KOORDGANG_URL] (default: %(default)s)",
    )
    whatif.add_argument(
        "--from-cluster",
        action="store_true",
        help="work it out here from the API server instead (read-only: lists nodes, pods, "
        "PriorityClasses and the gang objects), with --kubeconfig or the default kubeconfig",
    )
    whatif.add_argument("--kubeconfig", help="with --from-cluster: the kubeconfig to use")
    whatif.add_argument(
        "--config",
        metavar="FILE",
        help="with --from-cluster: the daemon's settings file, so that scores and waiting "
        "times match it [KOORDGANG_CONFIG]",
    )
    whatif.add_argument(
        "-o", "--output", choices=["text", "json"], default="text", help="(default: %(default)s)"
    )


def _whatif(args: argparse.Namespace) -> int:
    from koordgang.logs import configure_logging
    from koordgang.whatif.render import render_text
    from koordgang.whatif_view import BadInput, WhatIfFailed, ask_daemon, from_cluster

    # The answer alone goes to standard output (`-o json` is read by programs); what the
    # engine logs while working it out goes to standard error, warnings only.
    configure_logging(LogFormat.CONSOLE, "warning")

    try:
        if args.filename == "-":
            text = sys.stdin.read()
        else:
            with open(args.filename, encoding="utf-8") as file:
                text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        print(f"koordgang: cannot read {args.filename}: {error}", file=sys.stderr)
        return 2
    try:
        if args.from_cluster or args.kubeconfig:
            path = args.config or os.environ.get("KOORDGANG_CONFIG")
            settings = resolve(read_file(path) if path else {}, read_env(os.environ), {})
            answer = from_cluster(args.kubeconfig, text, settings)
        else:
            answer = ask_daemon(args.server, text)
    except BadInput as error:
        print(f"koordgang: {error}", file=sys.stderr)
        return 2
    except (WhatIfFailed, SettingsError) as error:
        print(f"koordgang: {error}", file=sys.stderr)
        return 1
    if args.output == "json":
        import json

        print(json.dumps(answer, indent=2))
    else:
        print(render_text(answer))
    return 0


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
            names = scheduler_names(args.scheduler_name)
        except ValueError as error:
            print(f"koordgang: --scheduler-name: {error}", file=sys.stderr)
            return 2
        try:
            if args.kubeconfig or args.from_cluster:
                gangs = from_cluster(args.kubeconfig, names, with_basic=args.with_basic)
            else:
                gangs = fetch(args.url, with_basic=args.with_basic)
        except ViewError as error:
            print(f"koordgang: {error}", file=sys.stderr)
            return 1
        if args.output == "json":
            import json

            print(json.dumps(gangs, indent=2))
        else:
            print(render_table(gangs))
        return 0
    if args.command == "whatif":
        return _whatif(args)
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
    """``kubectl koordgang gangs|whatif ...`` (this program installed as
    ``kubectl-koordgang``): read from the API server with kubectl's kubeconfig (a what-if asks
    a daemon only when given ``--server``)."""
    argv = sys.argv[1:]
    if not argv or argv[0] not in ("gangs", "whatif"):
        print(
            "usage: kubectl koordgang gangs [--all] [-o table|json]\n"
            "       kubectl koordgang whatif -f FILE [-o text|json]",
            file=sys.stderr,
        )
        return 2
    asks_daemon = argv[0] == "whatif" and any(a.startswith("--server") for a in argv)
    if "--kubeconfig" not in argv and not asks_daemon:
        argv = [*argv, "--from-cluster"]
    return main(argv)


if __name__ == "__main__":
    sys.exit(main())
