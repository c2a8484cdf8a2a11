"""`koordgang gangs`: the gangs a running daemon knows, as a table for people."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

COLUMNS = (
    "GANG",
    "GROUP",
    "MODE",
    "MIN",
    "CREATED",
    "PLACED",
    "BOUND",
    "STATE",
    "DOMAIN",
    "WAITING FOR",
)


class ViewError(Exception):
    pass


def fetch(url: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/gangs", timeout=timeout) as reply:
            body = json.loads(reply.read())
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise ViewError(
            f"cannot read {url}/gangs: {error} (is the daemon running? In a cluster: "
            "kubectl -n koordgang-system port-forward deploy/koordgang 10251)"
        ) from error
    gangs = body.get("gangs") if isinstance(body, dict) else None
    if not isinstance(gangs, list):
        raise ViewError(f"{url}/gangs did not answer with a list of gangs")
    return gangs


def _row(gang: dict[str, Any]) -> tuple[str, ...]:
    own = gang.get("gang", "")
    partners = [g for g in gang.get("group") or () if g != own]
    return (
        str(own),
        ",".join(partners) or "-",
        str(gang.get("mode", "")),
        str(gang.get("minAvailable") if gang.get("minAvailable") is not None else "?"),
        str(gang.get("created", 0)),
        str(gang.get("placed", 0)),
        str(gang.get("bound", 0)),
        str(gang.get("state", "")),
        str(gang.get("domain") or "-"),
        str(gang.get("waitingFor") or "-"),
    )


def render_table(gangs: Sequence[dict[str, Any]]) -> str:
    rows = [COLUMNS, *(_row(g) for g in gangs)]
    # The last column (the explanation) is not padded: it may be long.
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    if not gangs:
        lines.append("(no gangs)")
    return "\n".join(lines)
