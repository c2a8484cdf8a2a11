"""`python -m controlplane build|up|down|status` (run from the repository root)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from .build import BuildError, control_plane_binaries, ensure_built
from .cluster import ControlPlaneError, LocalControlPlane
from .layout import DEFAULT_NODES_FILE, DEFAULT_STATE_DIR
from .nodes import NodeSpecError
from .releases import UnknownRelease

# `status` exit code when the control plane is down, as `systemctl status` uses it.
EXIT_NOT_RUNNING = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controlplane",
        description=(
            "A local etcd + kube-apiserver + kwok for e2e tests and the demo; "
            "Kubernetes 1.37, or 1.36 with KUBE=1.36."
        ),
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help="where certs, etcd data, logs, pids and the kubeconfig go (default: %(default)s)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build the three binaries into the cache if needed")
    up = commands.add_parser(
        "up",
        help="build if needed, start (or reuse), create nodes; prints the kubeconfig path last",
    )
    up.add_argument(
        "--nodes",
        default=str(DEFAULT_NODES_FILE),
        metavar="FILE|none",
        help="fake nodes to create (default: %(default)s)",
    )
    commands.add_parser("down", help="stop kwok, kube-apiserver and etcd")
    commands.add_parser("status", help=f"say whether it is up (exit {EXIT_NOT_RUNNING} if not)")
    args = parser.parse_args(argv)

    # Treat SIGTERM (a CI timeout, `kill`) like Ctrl-C, so that an interrupted `up` stops
    # what it already started instead of leaving half a cluster running.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        plane = LocalControlPlane(args.state_dir)
    except UnknownRelease as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        if args.command == "build":
            plane.reporter.line(f"Kubernetes {plane.release.name}")
            ensure_built(plane.reporter, binaries=control_plane_binaries(plane.release))
        elif args.command == "up":
            plane.up(nodes_file=None if args.nodes == "none" else Path(args.nodes))
        elif args.command == "down":
            plane.down()
        elif args.command == "status":
            status = plane.status()
            print(status.describe())
            return 0 if status.up else EXIT_NOT_RUNNING
    except (BuildError, ControlPlaneError, NodeSpecError, TimeoutError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
