"""`koordgang gangs` renders what the daemon's /gangs says, one line per gang."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from koordgang.gangs_view import render_table

GANGS: list[dict[str, Any]] = [
    {
        "gang": "default/train",
        "api": "volcano",
        "group": ["default/train", "infer/serve"],
        "mode": "Strict",
        "minAvailable": 8,
        "totalNumber": 8,
        "created": 8,
        "placed": 6,
        "bound": 0,
        "state": "Pending",
        "domain": "SpineLayer s1 / BlockLayer b2",
        "devices": {
            "default/train-0": ["gpu-1: gpu.example.com/gpu-1/gpu-0", "gpu-1: x/gpu-1/gpu-1"],
            "default/train-1": ["gpu-2: gpu.example.com/gpu-2/gpu-0"],
            # Shares train-0's claim (their PodGroup's): its devices count once.
            "default/train-2": ["gpu-1: gpu.example.com/gpu-1/gpu-0"],
        },
        "waitingFor": "gang default/train: 6/8 members placed, min 8",
    },
    {
        "gang": "infer/serve",
        "api": "koordinator",
        "group": ["default/train", "infer/serve"],
        "mode": "NonStrict",
        "minAvailable": None,
        "totalNumber": 0,
        "created": 2,
        "placed": 0,
        "bound": 0,
        "state": "Invalid",
        "waitingFor": "",
    },
]


def test_the_table_has_a_line_per_gang_with_partners_counts_and_reason() -> None:
    lines = render_table(GANGS).splitlines()
    assert lines[0].split() == [
        "GANG",
        "API",
        "GROUP",
        "MODE",
        "MIN",
        "CREATED",
        "PLACED",
        "BOUND",
        "STATE",
        "DOMAIN",
        "DEVICES",
        "EXPECTED",
        "START",
        "WAITING",
        "FOR",
    ]
    assert lines[1].split()[:9] == [
        "default/train",
        "volcano",
        "infer/serve",
        "Strict",
        "8",
        "8",
        "6",
        "0",
        "Pending",
    ]
    assert "SpineLayer s1 / BlockLayer b2" in lines[1]
    # The devices the members got through their claims: how many, on how many nodes.
    assert "3 on 2 nodes" in lines[1]
    assert lines[1].endswith("gang default/train: 6/8 members placed, min 8")
    # An unusable min-available shows as "?", no reason as "-".
    assert lines[2].split() == [
        "infer/serve",
        "koordinator",
        "default/train",
        "NonStrict",
        "?",
        "2",
        "0",
        "0",
        "Invalid",
        "-",
        "-",
        "-",
        "-",
    ]


def test_an_empty_list_says_so() -> None:
    assert render_table([]).splitlines()[-1] == "(no gangs)"


@pytest.fixture
def daemon_url() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"gangs": GANGS}).encode()
            self.send_response(200 if self.path == "/gangs" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_the_command_prints_the_table_or_json(daemon_url: str) -> None:
    table = subprocess.run(
        [sys.executable, "-m", "koordgang", "gangs", "--url", daemon_url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "default/train" in table.stdout and "6/8 members placed" in table.stdout
    raw = subprocess.run(
        [sys.executable, "-m", "koordgang", "gangs", "--url", daemon_url, "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(raw.stdout) == GANGS


def test_an_unreachable_daemon_is_a_clear_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "koordgang", "gangs", "--url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "cannot read http://127.0.0.1:9/gangs" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_expected_start_reads_as_a_time_none_or_a_dash() -> None:
    """A gang waiting for room shows when it starts (UTC, with the day when not today),
    ``none`` when room it needs is held without a time limit, ``-`` without an estimate."""
    later = time.time() + 2 * 86400
    soon = 60 * (time.time() // 60) + 30  # half past a minute: shown as the next one
    rows: list[dict[str, Any]] = [
        {
            "gang": "ns/soon",
            "expectedStart": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(soon)),
        },
        {
            "gang": "ns/later",
            "expectedStart": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(later)),
        },
        {"gang": "ns/held", "expectedStart": None, "startHeldBy": ["ns/endless"]},
        {"gang": "ns/running"},
    ]
    column = render_table(rows).splitlines()[0].index("EXPECTED START")
    starts = [line[column:].split("  ")[0].strip() for line in render_table(rows).splitlines()]
    assert starts[1] == time.strftime("%H:%M UTC", time.gmtime(soon + 30))
    assert starts[2] == time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(math.ceil(later / 60) * 60))
    assert starts[3:] == ["none", "-"]
