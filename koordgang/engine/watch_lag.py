"""How late the pod informer shows a binding: from the API server accepting a Binding of ours
(its reply) to the informer applying that pod bound in the cache. The same watch stream brings
another scheduler's bindings, so this is also about how long room another scheduler has just
taken still looks free here; with ``koordgang_binding_landed_seconds`` (the decision to the
binding's acceptance) it tells how wide the window is in which two schedulers can both fill
the last room of a node.

A pod may be seen bound before its reply is read (the watch event and the reply come on
different connections): that counts as no lag at all.
"""

from __future__ import annotations

from collections.abc import Callable

from koordgang.engine.metrics import Metrics

#: Accepted bindings waiting to be seen, at most: a pod deleted before the watch showed it
#: bound, or a watch that broke off, leaves its entry behind; the oldest go first.
LIMIT = 10_000


class WatchLag:
    def __init__(self, metrics: Metrics, clock: Callable[[], float]) -> None:
        self._metrics = metrics
        self._clock = clock
        #: pod uid -> when its Binding was accepted.
        self._landed: dict[str, float] = {}

    def landed(self, uid: str, seen: bool) -> None:
        """The Binding of pod ``uid`` was accepted; ``seen``: the informer showed it bound
        already."""
        if seen:
            self._metrics.watch_lag.observe(0.0)
            return
        if len(self._landed) >= LIMIT:
            del self._landed[next(iter(self._landed))]
        self._landed[uid] = self._clock()

    def seen(self, uid: str) -> None:
        """The informer applied pod ``uid`` bound."""
        at = self._landed.pop(uid, None)
        if at is not None:
            self._metrics.watch_lag.observe(max(0.0, self._clock() - at))

    def forget(self, uid: str) -> None:
        self._landed.pop(uid, None)

    @property
    def waiting(self) -> int:
        return len(self._landed)
