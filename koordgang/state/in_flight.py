"""Pods another scheduler is placing right now, and the node each is likely to land on.

Two schedulers filling the same nodes each decide on a view that lacks the other's last tenth
of a second or more of bindings (the API server's time to accept a Binding, then its watch):
both give the last room of a node away, and a kubelet refuses one of the pods (``OutOfcpu``).
Plain pods carry no nomination, so nothing says where kube-scheduler is about to put them; but
a pod it has not tried yet (no ``PodScheduled`` condition: kube-scheduler writes one only when
a pod does not fit) is about to be placed, and its default profile sends it to the least
allocated node that holds it. Counting such a pod there, as if nominated, until it binds,
until its scheduler says it does not fit, or until it is older than it would be were its
scheduler busy with it, keeps that room out of our decisions for the tenth of a second the
other's binding is on its way. The node is a guess (kube-scheduler breaks ties at random and
may run other scores); the amount is not, so room short of the other's pods in flight is not
given away whichever nodes they land on.

Pure: the cache asks this store, and the loop expires it by the wall clock it is given.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from koordgang.model.pod import PodInfo
from koordgang.model.resources import CPU, MEMORY, PODS
from koordgang.model.taints import first_untolerated
from koordgang.state.node_state import NodeState

#: At most this many nodes that hold a pod are compared for its guess, and at most
#: ``EXAMINED_NODES`` looked at (from a place that moves on from guess to guess, as
#: kube-scheduler samples big clusters): a guess costs about the same on 5,000 nodes as on
#: 1,000, full or not.
FEASIBLE_NODES = 100
EXAMINED_NODES = 1_000


class InFlight:
    """uid -> the node a pod of another scheduler, not tried yet, is counted on."""

    def __init__(self, seconds: float, wall: Callable[[], float]) -> None:
        #: How long after its creation a pod still counts (its scheduler busy with others).
        self.seconds = seconds
        self._wall = wall
        self._node: dict[str, str] = {}
        #: (deadline, uid): the order in which guesses expire.
        self._deadlines: list[tuple[float, str]] = []
        #: Pods still waiting for their first try whose time is over, or that no node held
        #: when first seen: never guessed again.
        self._done: set[str] = set()
        self._start = 0

    @staticmethod
    def applies(pod: PodInfo) -> bool:
        """Is ``pod`` (of another scheduler) waiting for its first try, with room to count?"""
        return not (
            pod.node_name
            or pod.nominated_node_name
            or pod.conditions_pod_scheduled is not None
            or pod.scheduling_gates
            or pod.is_terminal
            or pod.is_terminating
            or pod.mirror
        )

    def node_for(self, pod: PodInfo, nodes: Callable[[], Sequence[NodeState]]) -> str:
        """The node ``pod`` counts on: the one guessed before, else a new guess ("" once its
        time is over, or when no node holds it)."""
        uid = pod.uid
        node = self._node.get(uid)
        if node is not None:
            return node
        if uid in self._done:
            return ""
        now = self._wall()
        # A creation time ahead of our clock (skew) counts as now.
        deadline = min(pod.creation_timestamp or now, now) + self.seconds
        if deadline <= now:
            self._done.add(uid)
            return ""
        node, self._start = likely_node(pod, nodes(), self._start)
        if not node:
            # Nothing holds it now: its scheduler will find no room either, and say so.
            self._done.add(uid)
            return ""
        self._node[uid] = node
        heapq.heappush(self._deadlines, (deadline, uid))
        return node

    def drop(self, uid: str) -> None:
        """``uid`` counts here no more: it is bound, nominated, tried (a ``PodScheduled``
        condition stays once written), gated, ending, or gone. Nothing of it is kept."""
        self._node.pop(uid, None)
        self._done.discard(uid)

    def expired(self) -> list[str]:
        """The pods whose time ran out since the last call (the caller counts them again)."""
        now = self._wall()
        out: list[str] = []
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= now:
            _, uid = heapq.heappop(deadlines)
            if self._node.pop(uid, None) is not None:
                self._done.add(uid)
                out.append(uid)
        return out

    def __len__(self) -> int:
        return len(self._node)


def likely_node(pod: PodInfo, nodes: Sequence[NodeState], start: int) -> tuple[str, int]:
    """The node kube-scheduler's default profile would most likely pick for ``pod``: of the
    first ``FEASIBLE_NODES`` that hold it (from ``start`` on, round the list, ``EXAMINED_NODES``
    at most), the least allocated (the mean share of cpu and memory left, its NodeResourcesFit
    score); the first of equals. Returns it ("" if none of those holds the pod) and where the
    next guess starts."""
    count = len(nodes)
    if not count:
        return "", 0
    requests = pod.requests
    wanted = [(name, amount) for name, amount in requests.items() if amount > 0]
    best, best_score, feasible = "", -1.0, 0
    index = start % count
    for step in range(min(count, EXAMINED_NODES)):
        state = nodes[(index + step) % count]
        info = state.info
        if info is None or info.unschedulable or state.free(PODS) < 1:
            continue
        if any(state.free(name) < amount for name, amount in wanted):
            continue
        if pod.node_selector and any(
            info.labels.get(key) != value for key, value in pod.node_selector.items()
        ):
            continue
        if pod.required_affinity is not None and not pod.required_affinity.matches(
            info.name, info.labels
        ):
            continue
        if (
            info.scheduling_taints
            and first_untolerated(info.scheduling_taints, pod.tolerations) is not None
        ):
            continue
        score = _left(state, CPU, requests.get(CPU)) + _left(state, MEMORY, requests.get(MEMORY))
        if score > best_score:
            best, best_score = state.name, score
        feasible += 1
        if feasible >= FEASIBLE_NODES:
            break
    return best, (index + 1) % count


def _left(state: NodeState, name: str, amount: int) -> float:
    """The share of ``name`` left on the node once ``amount`` more is taken (0 without it)."""
    allocatable = state.allocatable(name)
    if allocatable <= 0:
        return 0.0
    return max(0, state.free(name) - amount) / allocatable
