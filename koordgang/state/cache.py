"""The scheduler's memory of the cluster: nodes, every live pod, and pods it has assumed.

Pure and synchronous. Informer events and scheduling decisions both land here; a pod counts on
a node when the API server says it is bound there, or when this scheduler has placed it there
and the binding has not been observed yet (an *assumed* pod). Counting is derived from those two
facts for each pod, so applying the same event twice, or events in any order, never counts a pod
twice or forgets it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from koordgang.model.node import NodeInfo
from koordgang.model.pod import PodInfo
from koordgang.model.resources import Resources
from koordgang.state.node_state import NodeState

_Account = tuple[str, Resources]

#: One counter for all caches, so that a generation number identifies one cache's node set even
#: when several caches exist (a copy for a dry run, say).
_generations = itertools.count(1)
_FREED_LOG_MAX = 20_000


class SchedulerCache:
    def __init__(self) -> None:
        self._nodes: dict[str, NodeState] = {}
        self._pods: dict[str, PodInfo] = {}
        #: uid -> (node, requests) currently added to that node's usage.
        self._accounted: dict[str, _Account] = {}
        #: uid -> node chosen by this scheduler, binding not yet observed.
        self._assumed: dict[str, str] = {}
        #: Bumped when a node appears, goes or changes spec; keys caches of static filters.
        self.node_generation = next(_generations)
        self._node_list: list[NodeState] | None = None
        #: Names of nodes whose usage went down, in order (see ``freed_since``).
        self._freed: list[str] = []
        self._freed_base = 0

    # -- nodes -------------------------------------------------------------------------------

    def upsert_node(self, info: NodeInfo) -> bool:
        """Adds or updates a node; returns True if its spec changed (not just its version)."""
        state = self._nodes.get(info.name)
        if state is None:
            state = self._nodes[info.name] = NodeState(info.name, info)
            self._nodes_changed()
            return True
        old = state.info
        state.info = info
        changed = old is None or _spec_changed(old, info)
        if changed:
            state.generation += 1
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
        else:
            del self._nodes[name]
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

    def all_node_states(self) -> Iterator[NodeState]:
        return iter(self._nodes.values())

    # -- room freed ---------------------------------------------------------------------------

    def note_freed(self, name: str) -> None:
        """Records that ``name`` has more room than before (a pod left, a plan was dropped).

        Indexes of best nodes only ever see usage grow between rebuilds; this log tells them
        which nodes to look at again."""
        self._freed.append(name)
        if len(self._freed) > _FREED_LOG_MAX:
            drop = len(self._freed) - _FREED_LOG_MAX // 2
            del self._freed[:drop]
            self._freed_base += drop

    @property
    def freed_position(self) -> int:
        return self._freed_base + len(self._freed)

    def freed_since(self, position: int) -> list[str] | None:
        """Nodes freed since ``position``; None if the log no longer reaches back that far."""
        if position < self._freed_base:
            return None
        return self._freed[position - self._freed_base :]

    def _nodes_changed(self) -> None:
        self.node_generation = next(_generations)
        self._node_list = None

    # -- pods --------------------------------------------------------------------------------

    def upsert_pod(self, pod: PodInfo) -> PodInfo | None:
        """Adds or updates a pod; returns the previous version."""
        old = self._pods.get(pod.uid)
        self._pods[pod.uid] = pod
        if pod.node_name and self._assumed.get(pod.uid) is not None:
            # The binding is now visible (here or, if someone else bound it, elsewhere).
            del self._assumed[pod.uid]
        self._reaccount(pod.uid)
        return old

    def remove_pod(self, uid: str) -> PodInfo | None:
        old = self._pods.pop(uid, None)
        self._assumed.pop(uid, None)
        self._reaccount(uid)
        return old

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

    # -- assumptions -------------------------------------------------------------------------

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Counts ``pod`` on ``node_name`` before the API server has seen the binding."""
        if pod.uid not in self._pods:
            self._pods[pod.uid] = pod
        self._assumed[pod.uid] = node_name
        self._reaccount(pod.uid)

    def forget(self, uid: str) -> None:
        """Drops an assumption (binding failed or was abandoned); idempotent."""
        if self._assumed.pop(uid, None) is not None:
            self._reaccount(uid)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def assumed_node(self, uid: str) -> str | None:
        return self._assumed.get(uid)

    def node_of(self, uid: str) -> str | None:
        """The node a pod counts on (bound or assumed), if any."""
        account = self._accounted.get(uid)
        return None if account is None else account[0]

    # -- accounting --------------------------------------------------------------------------

    def _desired(self, uid: str) -> _Account | None:
        pod = self._pods.get(uid)
        if pod is None or pod.is_terminal:
            return None
        if pod.node_name:
            return (pod.node_name, pod.requests)
        assumed = self._assumed.get(uid)
        if assumed is not None:
            return (assumed, pod.requests)
        return None

    def _reaccount(self, uid: str) -> None:
        current = self._accounted.get(uid)
        desired = self._desired(uid)
        if current == desired:
            return
        if current is not None:
            state = self._nodes.get(current[0])
            if state is not None:
                state.remove(uid, current[1])
                self.note_freed(current[0])
                if state.info is None and not state.pods:
                    del self._nodes[current[0]]
            del self._accounted[uid]
        if desired is not None:
            state = self._nodes.get(desired[0])
            if state is None:
                state = self._nodes[desired[0]] = NodeState(desired[0])
            state.add(uid, desired[1])
            self._accounted[uid] = desired


def _spec_changed(old: NodeInfo, new: NodeInfo) -> bool:
    return (
        old.labels != new.labels
        or old.allocatable != new.allocatable
        or old.taints != new.taints
        or old.unschedulable != new.unschedulable
        or old.ready != new.ready
    )
