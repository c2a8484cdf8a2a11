"""The scheduler's memory of the cluster: nodes, every live pod, and pods it has assumed.

Pure and synchronous. Informer events and scheduling decisions both land here; a pod counts on
a node when the API server says it is bound there, when this scheduler has placed it there
and the binding has not been observed yet (an *assumed* pod), or when another scheduler has
nominated it there (``status.nominatedNodeName`` of an unbound pod not ours: kube-scheduler
holds that room for it, and so do we; a cycle passes over the ones of lower priority than its
group, ``Snapshot.pass_over``), or, not tried by its scheduler yet, on the node that scheduler
is likely to give it (``state/in_flight.py``: room it is about to take). Counting is derived
from those facts for each pod, so applying the same event twice, or events in any order, never
counts a pod twice or forgets it.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator, Sequence

from koordgang.model.node import NodeInfo
from koordgang.model.pod import HostPort, PodInfo
from koordgang.model.resources import Resources
from koordgang.state.extensions import CacheExtension
from koordgang.state.in_flight import InFlight
from koordgang.state.node_state import NodeState
from koordgang.state.store import StoreChange

#: Where a pod counts, with what, and at which priority: (node, requests, host ports, priority).
_Account = tuple[str, Resources, tuple[HostPort, ...], int]

#: One counter for all caches, so that a generation number identifies one cache's node set even
#: when several caches exist.
_generations = itertools.count(1)
_CHANGE_LOG_MAX = 20_000


class SchedulerCache:
    def __init__(
        self,
        extensions: Sequence[CacheExtension] = (),
        own_schedulers: Collection[str] | None = None,
        in_flight: InFlight | None = None,
    ) -> None:
        #: The scheduler names whose pods are ours: the nominations of every other scheduler's
        #: pods count on their nodes. None: no nomination of another scheduler counts.
        self._own_schedulers = None if own_schedulers is None else frozenset(own_schedulers)
        #: uid -> node, for the pods of other schedulers that count where they are nominated
        #: (or, not tried yet, where they are likely to go).
        self._nominated: dict[str, str] = {}
        #: Pods of other schedulers about to be placed (None: they count nowhere until bound).
        self._in_flight = in_flight if own_schedulers is not None else None
        #: Stores of other kinds that follow pods onto nodes (the DRA manager): told when a
        #: pod is given up, and given a part of every snapshot.
        self.extensions = tuple(extensions)
        self._nodes: dict[str, NodeState] = {}
        self._pods: dict[str, PodInfo] = {}
        #: uid -> (node, requests) currently added to that node's usage.
        self._accounted: dict[str, _Account] = {}
        #: uid -> node chosen by this scheduler, binding not yet observed.
        self._assumed: dict[str, str] = {}
        #: Bumped when a node appears, goes or changes spec; keys caches of static filters.
        self.node_generation = next(_generations)
        self._node_list: list[NodeState] | None = None
        #: Names of nodes whose usage or spec changed, in order (see ``changes_since``).
        self._changes: list[str] = []
        #: Beside each change: did the node only get fuller (a pod came)? Everything else (a
        #: pod gone, a new spec) may have made it better for some pod.
        self._grew: list[bool] = []
        self._changes_base = 0
        #: namespace -> uids of the pods in it (selectors of pod affinity and spreading look
        #: at one namespace at a time).
        self._by_namespace: dict[str, set[str]] = {}
        #: uids of pods with pod affinity or anti-affinity terms: what an incoming pod must
        #: respect besides its own terms.
        self._with_pod_affinity: set[str] = set()
        #: How many counted pods run at each priority (preemption asks whether anything
        #: runs below a priority before it looks at any node).
        self._priorities: dict[int, int] = {}

    # -- nodes -------------------------------------------------------------------------------

    def upsert_node(self, info: NodeInfo) -> bool:
        """Adds or updates a node; returns True if its spec changed (not just its version)."""
        state = self._nodes.get(info.name)
        if state is None:
            state = self._nodes[info.name] = NodeState(info.name, info)
            self._note_change(info.name)
            self._nodes_changed()
            return True
        old = state.info
        state.info = info
        changed = old is None or _spec_changed(old, info)
        if changed:
            state.touch()
            self._note_change(info.name)
            self._nodes_changed()
        return changed

    def remove_node(self, name: str) -> None:
        state = self._nodes.get(name)
        if state is None:
            return
        if state.pods:
            # Pods still point at it: keep their usage, so that a node that comes back (or a
            # watch that was only late) does not look emptier than it is.
            state.info = None
            state.touch()
        else:
            del self._nodes[name]
        self._note_change(name)
        self._nodes_changed()

    def replace_nodes(self, infos: Iterable[NodeInfo]) -> None:
        """Makes the node set equal to a fresh LIST (after a relist)."""
        seen = set()
        for info in infos:
            seen.add(info.name)
            self.upsert_node(info)
        for name in [n for n, s in self._nodes.items() if s.info is not None and n not in seen]:
            self.remove_node(name)

    def node(self, name: str) -> NodeState | None:
        return self._nodes.get(name)

    def nodes(self) -> list[NodeState]:
        """Nodes that exist (placeholders excluded), in a stable order; do not mutate the list."""
        if self._node_list is None:
            self._node_list = sorted(
                (s for s in self._nodes.values() if s.info is not None), key=lambda s: s.name
            )
        return self._node_list

    # -- what changed ------------------------------------------------------------------------

    def _note_change(self, name: str, grew: bool = False) -> None:
        """Records that ``name``'s usage or spec changed. Indexes of best nodes keep a position
        in this log and look again at the nodes named since, up or down."""
        self._changes.append(name)
        self._grew.append(grew)
        if len(self._changes) > _CHANGE_LOG_MAX:
            drop = len(self._changes) - _CHANGE_LOG_MAX // 2
            del self._changes[:drop]
            del self._grew[:drop]
            self._changes_base += drop

    @property
    def change_position(self) -> int:
        return self._changes_base + len(self._changes)

    def changes_since(self, position: int) -> list[str] | None:
        """Nodes changed since ``position``; None if the log no longer reaches back that far."""
        if position < self._changes_base:
            return None
        return self._changes[position - self._changes_base :]

    def shrinks_since(self, position: int) -> list[str] | None:
        """Like ``changes_since``, leaving out the changes where a node only got fuller."""
        if position < self._changes_base:
            return None
        start = position - self._changes_base
        changes, grew = self._changes[start:], self._grew[start:]
        return [name for name, up in zip(changes, grew, strict=True) if not up]

    def _nodes_changed(self) -> None:
        self.node_generation = next(_generations)
        self._node_list = None

    # -- pods --------------------------------------------------------------------------------

    def upsert_pod(self, pod: PodInfo) -> PodInfo | None:
        """Adds or updates a pod; returns the previous version."""
        old = self._pods.get(pod.uid)
        self._pods[pod.uid] = pod
        if old is None or old.namespace != pod.namespace:
            if old is not None:
                self._unindex(old)
            self._by_namespace.setdefault(pod.namespace, set()).add(pod.uid)
        if pod.pod_affinity is not None:
            self._with_pod_affinity.add(pod.uid)
        else:
            self._with_pod_affinity.discard(pod.uid)
        if pod.node_name and self._assumed.get(pod.uid) is not None:
            # The binding is now visible (here or, if someone else bound it, elsewhere).
            del self._assumed[pod.uid]
        self._reaccount(pod.uid)
        if pod.is_terminal:
            # Done: what was assumed for it elsewhere (its claims: a write whose result was
            # never seen, the claim watch having been cut) holds nothing any more.
            self._released(pod.uid)
        return old

    def remove_pod(self, uid: str) -> PodInfo | None:
        old = self._pods.pop(uid, None)
        if old is not None:
            self._unindex(old)
        self._assumed.pop(uid, None)
        if self._in_flight is not None:
            self._in_flight.drop(uid)
        self._reaccount(uid)
        self._released(uid)
        return old

    def _unindex(self, pod: PodInfo) -> None:
        members = self._by_namespace.get(pod.namespace)
        if members is not None:
            members.discard(pod.uid)
            if not members:
                del self._by_namespace[pod.namespace]
        self._with_pod_affinity.discard(pod.uid)

    def replace_pods(self, pods: Iterable[PodInfo]) -> list[PodInfo]:
        """Makes the pod set equal to a fresh LIST; returns the pods that disappeared."""
        seen = set()
        for pod in pods:
            seen.add(pod.uid)
            self.upsert_pod(pod)
        gone = [p for uid, p in self._pods.items() if uid not in seen]
        for pod in gone:
            self.remove_pod(pod.uid)
        return gone

    def pod(self, uid: str) -> PodInfo | None:
        return self._pods.get(uid)

    def pods(self) -> Iterator[PodInfo]:
        return iter(self._pods.values())

    def pod_count(self) -> int:
        return len(self._pods)

    def pods_in_namespace(self, namespace: str) -> Iterator[PodInfo]:
        pods = self._pods
        return (pods[uid] for uid in self._by_namespace.get(namespace, ()))

    def namespaces(self) -> Iterable[str]:
        return self._by_namespace.keys()

    def has_pod_affinity(self) -> bool:
        return bool(self._with_pod_affinity)

    def pods_with_pod_affinity(self) -> Iterator[PodInfo]:
        pods = self._pods
        return (pods[uid] for uid in self._with_pod_affinity)

    # -- assumptions -------------------------------------------------------------------------

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Counts ``pod`` on ``node_name`` before the API server has seen the binding (what
        its placement took of other kinds, its claims' devices, a snapshot's commit hands to
        their extensions)."""
        if pod.uid not in self._pods:
            self.upsert_pod(pod)
        self._assumed[pod.uid] = node_name
        self._reaccount(pod.uid)

    def forget(self, uid: str) -> None:
        """Drops an assumption (binding failed or was abandoned), with what the extensions
        hold for it that was not seen written (its claims' allocations); idempotent."""
        if self._assumed.pop(uid, None) is not None:
            self._reaccount(uid)
        self._released(uid)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def nominated_for_others(self) -> Iterator[tuple[PodInfo, str]]:
        """(pod, node) for every pod of another scheduler counting where it is nominated (or
        likely to go)."""
        pods = self._pods
        return ((pods[uid], node) for uid, node in self._nominated.items())

    def node_of(self, uid: str) -> str | None:
        """The node a pod counts on (bound or assumed), if any."""
        account = self._accounted.get(uid)
        return None if account is None else account[0]

    # -- accounting --------------------------------------------------------------------------

    def _desired(self, pod: PodInfo | None, foreign: str) -> _Account | None:
        """Where ``pod`` counts: bound, assumed, or where another scheduler's pod counts
        before it is bound (``foreign``, from ``_foreign_node``)."""
        if pod is None or pod.is_terminal:
            return None
        if pod.node_name:
            return (pod.node_name, pod.requests, pod.host_ports, pod.priority)
        assumed = self._assumed.get(pod.uid)
        if assumed is not None:
            return (assumed, pod.requests, pod.host_ports, pod.priority)
        if foreign:
            return (foreign, pod.requests, pod.host_ports, pod.priority)
        return None

    def _foreign_node(self, pod: PodInfo) -> str:
        """Where another scheduler's pod counts before it is bound: its nomination, else,
        while its scheduler has not tried it yet, the node it is likely to go to ("")."""
        nominated = self._nominated_for_other(pod)
        in_flight = self._in_flight
        if in_flight is None or not self._is_other(pod):
            return nominated
        if nominated or not InFlight.applies(pod):
            in_flight.drop(pod.uid)
            return nominated
        return in_flight.node_for(pod, self.nodes)

    def expire_in_flight(self) -> bool:
        """Pods of other schedulers that were to be placed long ago count nowhere any more
        (their scheduler is not busy with them: it is not running, or far behind). True if
        any room came free."""
        if self._in_flight is None:
            return False
        expired = self._in_flight.expired()
        for uid in expired:
            self._reaccount(uid)
        return bool(expired)

    def in_flight_count(self) -> int:
        """How many pods of other schedulers count where they are likely to go."""
        return 0 if self._in_flight is None else len(self._in_flight)

    def _is_other(self, pod: PodInfo) -> bool:
        own = self._own_schedulers
        return own is not None and pod.scheduler_name not in own

    def _nominated_for_other(self, pod: PodInfo) -> str:
        """The node another scheduler nominated ``pod`` to, if its room counts there ("")."""
        own = self._own_schedulers
        if (
            own is None
            or not pod.nominated_node_name
            or pod.scheduler_name in own
            or pod.node_name
            or pod.is_terminal
            or pod.is_terminating
        ):
            return ""
        return pod.nominated_node_name

    def _reaccount(self, uid: str) -> None:
        current = self._accounted.get(uid)
        pod = self._pods.get(uid)
        nominated = "" if pod is None else self._foreign_node(pod)
        desired = self._desired(pod, nominated)
        if nominated and desired is not None and desired[0] == nominated:
            self._nominated[uid] = nominated
        else:
            self._nominated.pop(uid, None)
        if current == desired:
            return
        if current is not None:
            state = self._nodes.get(current[0])
            if state is not None:
                state.remove(uid, current[1], current[2])
                self._note_change(current[0])
                if state.info is None and not state.pods:
                    del self._nodes[current[0]]
            del self._accounted[uid]
            self._count_priority(current[3], -1)
        if desired is not None:
            state = self._nodes.get(desired[0])
            if state is None:
                state = self._nodes[desired[0]] = NodeState(desired[0])
            state.add(uid, desired[1], desired[2])
            self._note_change(desired[0], grew=True)
            self._accounted[uid] = desired
            self._count_priority(desired[3], 1)

    def _count_priority(self, priority: int, change: int) -> None:
        count = self._priorities.get(priority, 0) + change
        if count:
            self._priorities[priority] = count
        else:
            del self._priorities[priority]

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod that counts on a node (None: there is none)."""
        return min(self._priorities) if self._priorities else None

    # -- other kinds ---------------------------------------------------------------------------

    def touch_nodes(self, change: StoreChange) -> None:
        """Nodes whose state in another kind changed (their devices, or the use of them) are
        changed nodes: every view and index of them is redone. The name "" stands for every
        node (network-attached devices, offered on many)."""
        names = set(change.nodes)
        if "" in names:
            names.discard("")
            names |= {state.name for state in self.nodes()}
        for name in sorted(names):
            state = self._nodes.get(name)
            if state is not None:
                state.touch()
            self._note_change(name, grew=change.grew)

    def _released(self, uid: str) -> None:
        for extension in self.extensions:
            self.touch_nodes(extension.pod_released(uid))


def _spec_changed(old: NodeInfo, new: NodeInfo) -> bool:
    return (
        old.labels != new.labels
        or old.allocatable != new.allocatable
        or old.taints != new.taints
        or old.unschedulable != new.unschedulable
        or old.ready != new.ready
    )
