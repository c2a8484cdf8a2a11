"""`koordgang whatif`: flags, exit codes, and what it prints (a stand-in daemon answers)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from koordgang.cli import build_parser, main
from koordgang.whatif.render import render_text

ANSWER: dict[str, Any] = {
    "fits": False,
    "pods": 2,
    "sources": ["Job default/train"],
    "groups": [
        {
            "gangs": ["default/train"],
            "pods": ["default/train-0", "default/train-1"],
            "others": [],
            "outcome": "preempt",
            "placements": {},
            "domain": "",
            "unplaced": {},
            "short": {"nvidia.com/gpu": "8"},
            "evict": [
                {"pod": "default/low-0", "node": "gpu-1", "priority": 0, "job": "default/low"}
            ],
            "evictionCost": "1 pod(s), 1 job(s)",
            "nominated": {"default/train-0": "gpu-1", "default/train-1": "gpu-1"},
            "reservation": None,
            "notes": ["0/2 nodes are available: 2 Insufficient nvidia.com/gpu."],
        }
    ],
    "warnings": [],
}


class _Daemon(BaseHTTPRequestHandler):
    received: list[str] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        _Daemon.received.append(body)
        if "priorityClassName: nope" in body:
            # What only the daemon can check: the PriorityClass exists.
            status, reply = (
                400,
                {"error": "Job default/train: spec.priorityClassName: no PriorityClass 'nope'"},
            )
        else:
            status, reply = 200, ANSWER
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def daemon_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Daemon)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: default}
spec:
  parallelism: 2
  template:
    spec:
      schedulerName: koord-scheduler
      containers: [{name: main, image: x}]
"""


def test_the_parser_knows_whatif() -> None:
    args = build_parser().parse_args(["whatif", "-f", "job.yaml", "-o", "json"])
    assert (args.filename, args.output, args.from_cluster) == ("job.yaml", "json", False)
    assert args.server == "http://127.0.0.1:10251"


def test_asks_the_daemon_and_prints_text(
    daemon_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    assert main(["whatif", "-f", str(job), "--server", daemon_url]) == 0
    out = capsys.readouterr().out
    assert out == render_text(ANSWER) + "\n"
    assert "would evict (1 pod(s), 1 job(s)), in eviction order:" in out
    assert "short: the members that found no node ask for 8 nvidia.com/gpu" in out
    assert _Daemon.received[-1] == JOB


def test_json_output_is_the_answer(
    daemon_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    assert main(["whatif", "-f", str(job), "--server", daemon_url, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == ANSWER


def test_bad_input_exits_2_with_the_daemons_message(
    daemon_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(JOB.replace("schedulerName: koord-scheduler", "priorityClassName: nope"))
    assert main(["whatif", "-f", str(bad), "--server", daemon_url]) == 2
    assert "spec.priorityClassName: no PriorityClass 'nope'" in capsys.readouterr().err


def test_a_file_that_is_no_job_is_refused_without_asking_the_daemon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    # Nobody listens on port 9: the answer comes from reading the file.
    assert main(["whatif", "-f", str(bad), "--server", "http://127.0.0.1:9"]) == 2
    assert "ConfigMap default/c: kind: v1 ConfigMap is neither a Pod" in capsys.readouterr().err


def test_bad_input_is_refused_before_the_cluster_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "svc.yaml"
    bad.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    kubeconfig = tmp_path / "nowhere"
    assert main(["whatif", "-f", str(bad), "--kubeconfig", str(kubeconfig)]) == 2
    assert "Service" in capsys.readouterr().err


def test_no_daemon_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    assert main(["whatif", "-f", str(job), "--server", "http://127.0.0.1:9"]) == 1
    assert "cannot ask" in capsys.readouterr().err


def test_a_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", "-f", "/nonexistent/job.yaml"]) == 2
    assert "cannot read /nonexistent/job.yaml" in capsys.readouterr().err


def test_what_the_guard_would_hold_is_rendered() -> None:
    group = dict(ANSWER["groups"][0])
    group.update(
        outcome="pending",
        evict=[],
        reservation={
            "afterSeconds": 30.0,
            "nominated": {"default/train-0": "gpu-2"},
            "waitingFor": [{"pod": "default/small", "node": "gpu-2", "runningSeconds": 40}],
            "notes": ["after waiting 30s it would hold 1 node(s)"],
        },
    )
    text = render_text({**ANSWER, "groups": [group]})
    assert "after 30s without fitting, it would hold" in text
    assert "    gpu-2: default/train-0" in text
    assert "    waits for default/small on gpu-2 (running 40s)" in text
