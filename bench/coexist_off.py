"""``python -m bench.coexist_off run ...``: ``python -m koordgang run ...`` with its safeguards
beside other schedulers switched off, for the "off" side of the coexist scenario. A bench
switch, not a daemon flag: users have no reason to turn them off.

Two things differ, and nothing else: another scheduler's nomination
(``status.nominatedNodeName`` of its unbound pod) counts on no node, as when the cache knows no
scheduler names of its own (``SchedulerCache(own_schedulers=None)``); and Fit's re-check of a
gang's nodes just before its bindings go passes every gang.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from koordgang.cli import main
from koordgang.plugins.noderesources.fit import Fit
from koordgang.state.cache import SchedulerCache


def _no_foreign_nomination(self: SchedulerCache, pod: object) -> str:
    return ""


def _no_recheck(self: Fit, placements: Sequence[object]) -> Mapping[str, str]:
    return {}


def switch_off(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Replaces the two methods (``set_attribute``: a test's monkeypatch, to undo it)."""
    set_attribute(SchedulerCache, "_nominated_for_other", _no_foreign_nomination)
    set_attribute(Fit, "verify", _no_recheck)


if __name__ == "__main__":
    switch_off()
    sys.exit(main())
