"""A peer's own words for why pods stayed pending, from its log: the last few distinct
scheduling failures it reported (klog lines naming an error, a rejection or a timeout)."""

from __future__ import annotations

import re
from pathlib import Path

#: Lines worth quoting: kube-scheduler's "Unable to schedule pod" and its plugins' rejections.
_WORTH_QUOTING = re.compile(
    r"Unable to schedule|unschedulable|rejected|timed? ?out|timeout|failed|error", re.I
)
#: What differs between two reports of the same failure: pod and gang names, numbers, times.
_VARYING = re.compile(r'pod="[^"]*"|[0-9a-f]{5,}|\d+(\.\d+)?')


def peer_reasons(log_path: Path, limit: int = 4, width: int = 400) -> list[str]:
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    quoted: list[str] = []
    seen: set[str] = set()
    for line in reversed(lines):
        if not _WORTH_QUOTING.search(line):
            continue
        key = _VARYING.sub("#", line.split("]", 1)[-1])
        if key in seen:
            continue
        seen.add(key)
        quoted.append(line.strip()[:width])
        if len(quoted) >= limit:
            break
    return list(reversed(quoted))
