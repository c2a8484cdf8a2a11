"""Command line: ``koordgang run`` (the daemon) and ``koordgang version``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from koordgang.settings import LogFormat, ScoreStrategy, Settings

DESCRIPTION = """\
koordgang schedules the pods that ask for it (spec.schedulerName) with gang semantics:
all members of a gang are bound together or none is. Every other pod in the cluster is
watched too, because it uses node capacity."""

EPILOG = """\
Every flag can also be set through the environment variable shown in brackets; a flag
given on the command line wins.

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
    defaults = Settings()
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
        "--scheduler-name",
        default=_env("KOORDGANG_SCHEDULER_NAME", defaults.scheduler_name),
        help="schedule pods whose spec.schedulerName is this [KOORDGANG_SCHEDULER_NAME] "
        "(default: %(default)s)",
    )
    run.add_argument(
        "--kubeconfig",
        default=_env("KUBECONFIG", defaults.kubeconfig),
        help="kubeconfig file; without one, the in-cluster service account is used, then "
        "~/.kube/config [KUBECONFIG]",
    )
    run.add_argument(
        "--log-format",
        type=LogFormat,
        choices=list(LogFormat),
        default=LogFormat(_env("KOORDGANG_LOG_FORMAT", defaults.log_format.value)),
        help="json (one object per line, for log collectors) or console (for people) "
        "[KOORDGANG_LOG_FORMAT] (default: %(default)s)",
    )
    run.add_argument(
        "--log-level",
        default=_env("KOORDGANG_LOG_LEVEL", defaults.log_level),
        choices=["debug", "info", "warning", "error"],
        help="[KOORDGANG_LOG_LEVEL] (default: %(default)s)",
    )
    run.add_argument(
        "--score-strategy",
        type=ScoreStrategy,
        choices=list(ScoreStrategy),
        default=ScoreStrategy(_env("KOORDGANG_SCORE_STRATEGY", defaults.score_strategy.value)),
        help="LeastAllocated spreads pods over nodes; MostAllocated packs them (keeps whole "
        "nodes free for big jobs) [KOORDGANG_SCORE_STRATEGY] (default: %(default)s)",
    )
    run.add_argument(
        "--preemption",
        type=_boolean,
        default=_boolean(_env("KOORDGANG_PREEMPTION", str(defaults.preemption).lower())),
        metavar="true|false",
        help="evict lower-priority pods to make room for a job of ours that does not fit "
        "[KOORDGANG_PREEMPTION] (default: %(default)s)",
    )
    run.add_argument(
        "--bind-concurrency",
        type=int,
        default=int(_env("KOORDGANG_BIND_CONCURRENCY", str(defaults.bind_concurrency))),
        help="Binding requests in flight at once [KOORDGANG_BIND_CONCURRENCY] "
        "(default: %(default)s)",
    )
    run.add_argument(
        "--scheduled-event-rate",
        type=float,
        default=float(
            _env("KOORDGANG_SCHEDULED_EVENT_RATE", str(defaults.scheduled_events_per_second))
        ),
        help="most 'Scheduled' Events per second (burst 500); above it they are dropped so that "
        "binding keeps the API server's capacity; 0 writes none [KOORDGANG_SCHEDULED_EVENT_RATE] "
        "(default: %(default)s)",
    )
    run.add_argument(
        "--http-port",
        type=int,
        default=int(_env("KOORDGANG_HTTP_PORT", str(defaults.http_port))),
        help="port for /healthz, /readyz and /metrics; 0 turns them off [KOORDGANG_HTTP_PORT] "
        "(default: %(default)s)",
    )
    run.add_argument(
        "--http-host",
        default=_env("KOORDGANG_HTTP_HOST", defaults.http_host),
        help="address the HTTP endpoints listen on [KOORDGANG_HTTP_HOST] (default: %(default)s)",
    )
    gangs = commands.add_parser(
        "gangs",
        help="list the gangs a running daemon knows and why each waits",
        description="Reads /gangs from a running koordgang daemon and prints one line per gang: "
        "its GangGroup partners, mode, min-available, members created / placed (reserved or "
        "bound) / bound, state, and what it waits for.",
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


def settings_from_args(args: argparse.Namespace) -> Settings:
    if args.bind_concurrency < 1:
        raise SystemExit("koordgang: --bind-concurrency must be at least 1")
    if args.scheduled_event_rate < 0:
        raise SystemExit("koordgang: --scheduled-event-rate must not be negative")
    if not 0 <= args.http_port <= 65535:
        raise SystemExit("koordgang: --http-port must be between 0 and 65535")
    return Settings(
        scheduler_name=args.scheduler_name,
        kubeconfig=args.kubeconfig,
        log_format=args.log_format,
        log_level=args.log_level,
        score_strategy=args.score_strategy,
        preemption=args.preemption,
        bind_concurrency=args.bind_concurrency,
        scheduled_events_per_second=args.scheduled_event_rate,
        http_port=args.http_port,
        http_host=args.http_host,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"koordgang {_package_version()}")
        return 0
    if args.command == "gangs":
        from koordgang.gangs_view import ViewError, fetch, render_table

        try:
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
    settings = settings_from_args(args)
    from koordgang.app import run  # late: keeps `--help` fast
    from koordgang.clients.config import ConfigError
    from koordgang.logs import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    try:
        return run(settings)
    except ConfigError as error:
        print(f"koordgang: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())


def _boolean(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
