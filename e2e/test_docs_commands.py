"""Every command the docs show, bar the exempt ones, run as written on the local control plane.

Which commands, and the exemptions: the rule at the top of tests/test_docs.py. Each page runs
on its own, its commands in its order, on the README's local cluster: the sample nodes of
``make cluster-up`` (controlplane/nodes.yaml) and a daemon running, as ``make run`` leaves one.
The daemon is the ``daemon`` fixture's (the scheduler's own ServiceAccount, a port of its own);
the commands that ask it reach it through ``KOORDGANG_URL``, as they would a daemon listening
anywhere else. ``KUBECONFIG`` is the cluster's (an ``export KUBECONFIG=`` on a page must name
that very file) and the virtual environment's programs come first on PATH (``koordgang``,
``kubectl-koordgang``). Each command must exit 0; where the page shows its output, every line
shown must be printed, in order and spaces aside (a command whose output is shown is run again,
for up to ``SETTLE`` seconds, until it does: the cluster settles after the commands before it).
What a page applied with ``kubectl apply -f`` is deleted after it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from controlplane import DEFAULT_NODES_FILE, LocalControlPlane
from harness.daemon import Daemon, LocalDaemon
from harness.doc_commands import (
    REPO,
    Command,
    all_commands,
    commands,
    exemption_for,
    exemptions,
    runnable,
)
from harness.kube import Cluster

pytestmark = [
    pytest.mark.skipif(
        bool(os.environ.get("KOORDGANG_E2E_KUBECONFIG")),
        reason="the pages' commands are written for the local control plane",
    ),
    pytest.mark.skipif(
        os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment",
        reason="points the commands at a daemon process of its own",
    ),
]

#: What the pages' commands create lands here: no page names a namespace.
NAMESPACE = "default"
TIMEOUT = 180
#: How long a command whose output the page shows may take to print it (pods bind, Jobs finish).
SETTLE = 90

EXEMPTIONS = exemptions()


def _to_run(command: Command) -> bool:
    return exemption_for(command, EXEMPTIONS) is None


PAGES = sorted({c.page for c in all_commands() if _to_run(c)})


def _applied_files(command: Command) -> list[str]:
    words = shlex.split(command.text)
    if words[:2] != ["kubectl", "apply"]:
        return []
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-f", "--filename")]


def _expanded(assignment: str, env: dict[str, str]) -> tuple[str, str]:
    """``NAME=VALUE`` of an ``export``, its value expanded by the shell as a user's would be."""
    name = assignment.partition("=")[0]
    shown = subprocess.run(
        ["bash", "-c", f'export {assignment}; printf %s "${{{name}}}"'],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    )
    return name, shown.stdout


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_commands_of_a_page_run_as_shown(
    page: Path,
    kubeconfig: str,
    control_plane: LocalControlPlane,
    clean_nodes: Cluster,
    daemon: Daemon,
) -> None:
    assert isinstance(daemon, LocalDaemon)
    # The README's local cluster: what `make cluster-up` leaves (the plane is the suite's).
    control_plane.up(nodes_file=DEFAULT_NODES_FILE)
    env = {
        **os.environ,
        "PWD": str(REPO),
        "KUBECONFIG": kubeconfig,
        "KOORDGANG_URL": f"http://127.0.0.1:{daemon.port}",
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    }
    applied: list[str] = []
    try:
        for command in (c for c in commands(page) if _to_run(c)):
            assert runnable(command), f"{command.where}: no way to run {command.text!r}"
            if command.words.startswith("export "):
                name, value = _expanded(command.words.removeprefix("export "), env)
                if name == "KUBECONFIG":
                    assert Path(value).resolve() == Path(kubeconfig).resolve(), (
                        f"{command.where}: the local cluster's kubeconfig is {kubeconfig}"
                    )
                else:
                    env[name] = value
                continue
            deadline = time.monotonic() + SETTLE
            while True:
                result = subprocess.run(
                    ["bash", "-c", command.text],
                    cwd=REPO,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT,
                )
                assert result.returncode == 0, (
                    f"{command.where}: `{command.text}` exited {result.returncode}:\n"
                    f"{result.stderr}\n{result.stdout}"
                )
                if not command.output or _shows(result.stdout, command.output):
                    break
                assert time.monotonic() < deadline, (
                    f"{command.where}: `{command.text}` printed\n{result.stdout}\n"
                    f"where the page shows\n" + "\n".join(command.output)
                )
                time.sleep(2)
            applied += _applied_files(command)
    finally:
        for file in reversed(applied):
            subprocess.run(
                ["kubectl", "delete", "-f", file, "--ignore-not-found", "--timeout=60s"],
                cwd=REPO,
                env=env,
                capture_output=True,
                timeout=90,
            )
        clean_nodes.delete_namespace_pods(NAMESPACE)


def _shows(printed: str, shown: Sequence[str]) -> bool:
    """Every line the page shows is printed, in order, spaces between words aside."""
    lines = [line.split() for line in printed.splitlines()]
    wanted = [line.split() for line in shown if line.strip()]
    return [line for line in lines if line] == wanted
