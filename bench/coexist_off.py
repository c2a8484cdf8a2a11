"""koordgang's safeguards beside other schedulers switched off, for the "off" variant of the
coexist scenario (``coexist_daemon.py`` runs the daemon with them off). A bench switch, not a
daemon flag: users have no reason to turn them off.

Two things differ, and nothing else: another scheduler's nomination
(``status.nominatedNodeName`` of its unbound pod) counts on no node, as when the cache knows no
scheduler names of its own (``SchedulerCache(own_schedulers=None)``); and Fit's re-check of a
gang's nodes just before its bindings go passes every gang.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
