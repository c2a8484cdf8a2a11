"""The scheduler's memory of the cluster: nodes, every live pod, and pods it has assumed.

Pure and synchronous. Informer events and scheduling decisions both land here; a pod counts on
a node when the API server says it is bound there, or when this scheduler has placed it there
and the binding has not been observed yet (an *assumed* pod). Counting is derived from those two
facts for each pod, so applying the same event twice, or events in any order, never counts a pod
twice or forgets it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping

from koordgang.model.budgets import BudgetInfo
from koordgang.model.dra import (
    ClaimAllocation,
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
)
from koordgang.model.node import NodeInfo
from koordgang.model.pod import HostPort, PodInfo
from koordgang.model.resources import Resources
from koordgang.model.volumes import ClaimInfo
from koordgang.state.devices import DeviceLedger, LedgerChange
from koordgang.state.node_state import NodeState

#: Where a pod counts, with what, and at which priority: (node, requests, host ports, priority).
_Account = tuple[str, Resources, tuple[HostPort, ...], int]

#: One counter for all caches, so that a generation number identifies one cache's node set even
#: when several caches exist.
_generations = itertools.count(1)
_CHANGE_LOG_MAX = 20_000


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
        #: Labels of each namespace (pod affinity terms may select namespaces by label).
        self._namespaces: dict[str, Mapping[str, str]] = {}
        #: PersistentVolumeClaims by ``namespace/name``.
        self._claims: dict[str, ClaimInfo] = {}
        #: PodDisruptionBudgets: namespace -> key -> budget.
        self._budgets: dict[str, dict[str, BudgetInfo]] = {}
        #: How many counted pods run at each priority (preemption asks whether anything
        #: runs below a priority before it looks at any node).
        self._priorities: dict[int, int] = {}
        #: Devices (Dynamic Resource Allocation), their classes and claims, and which devices
        #: are in use. Read it freely; change it through the cache, which tells the nodes.
        self.devices = DeviceLedger()

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
            # Done: what was assumed for its claims (a write whose result was never seen,
            # the claim watch having been cut) holds nothing any more.
            self._devices_changed(self.devices.forget(pod.uid))
        return old

    def remove_pod(self, uid: str) -> PodInfo | None:
        old = self._pods.pop(uid, None)
        if old is not None:
            self._unindex(old)
        self._assumed.pop(uid, None)
        self._reaccount(uid)
        self._devices_changed(self.devices.forget(uid))
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

    def assume(
        self,
        pod: PodInfo,
        node_name: str,
        claims: Mapping[str, ClaimAllocation] | None = None,
    ) -> None:
        """Counts ``pod`` on ``node_name`` before the API server has seen the binding, and
        the devices of the claims allocated for it before their allocations are seen."""
        if pod.uid not in self._pods:
            self.upsert_pod(pod)
        self._assumed[pod.uid] = node_name
        self._reaccount(pod.uid)
        if claims:
            self._devices_changed(self.devices.assume(pod.uid, claims))

    def forget(self, uid: str) -> None:
        """Drops an assumption (binding failed or was abandoned), with the claims allocated
        for it that were not seen written; idempotent."""
        if self._assumed.pop(uid, None) is not None:
            self._reaccount(uid)
        self._devices_changed(self.devices.forget(uid))

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

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
            return (pod.node_name, pod.requests, pod.host_ports, pod.priority)
        assumed = self._assumed.get(uid)
        if assumed is not None:
            return (assumed, pod.requests, pod.host_ports, pod.priority)
        return None

    def _reaccount(self, uid: str) -> None:
        current = self._accounted.get(uid)
        desired = self._desired(uid)
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

    # -- namespaces and claims -----------------------------------------------------------------

    def upsert_namespace(self, name: str, labels: Mapping[str, str]) -> bool:
        """Returns True if the labels changed."""
        changed = self._namespaces.get(name) != labels
        self._namespaces[name] = labels
        return changed

    def remove_namespace(self, name: str) -> None:
        self._namespaces.pop(name, None)

    def replace_namespaces(self, items: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        self._namespaces = dict(items)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of namespace ``name``; None when it is not known (yet)."""
        return self._namespaces.get(name)

    def upsert_claim(self, claim: ClaimInfo) -> bool:
        """Returns True if the claim is new or its phase or volume changed."""
        changed = self._claims.get(claim.key) != claim
        self._claims[claim.key] = claim
        return changed

    def remove_claim(self, key: str) -> None:
        self._claims.pop(key, None)

    def replace_claims(self, claims: Iterable[ClaimInfo]) -> None:
        self._claims = {claim.key: claim for claim in claims}

    def claim(self, namespace: str, name: str) -> ClaimInfo | None:
        return self._claims.get(f"{namespace}/{name}")

    # -- dynamic resource allocation -----------------------------------------------------------

    def _devices_changed(self, change: LedgerChange) -> LedgerChange:
        """Nodes whose devices, or the use of them, changed are changed nodes: every view
        and index of them is redone."""
        for name in change.nodes:
            state = self._nodes.get(name)
            if state is not None:
                state.touch()
            self._note_change(name, grew=change.grew)
        return change

    def claims_left_behind(self) -> list[str]:
        """Allocated claims whose consumers are all pods that are gone, finished or being
        deleted: the resourceclaim controller deallocates them soon, and a what-if may count
        their devices as free (preemption must not evict more for room on its way)."""
        left: list[str] = []
        for claim in self.devices.claims():
            if claim.allocation is None or not claim.reserved_for:
                continue
            if all(c.is_pod and self._departed(c.uid) for c in claim.reserved_for):
                left.append(claim.key)
        return left

    def _departed(self, uid: str) -> bool:
        pod = self._pods.get(uid)
        return pod is None or pod.is_terminal or pod.is_terminating

    def upsert_resource_slice(self, info: ResourceSliceInfo) -> LedgerChange:
        return self._devices_changed(self.devices.upsert_slice(info))

    def remove_resource_slice(self, name: str) -> LedgerChange:
        return self._devices_changed(self.devices.remove_slice(name))

    def replace_resource_slices(self, infos: Iterable[ResourceSliceInfo]) -> LedgerChange:
        return self._devices_changed(self.devices.replace_slices(infos))

    def upsert_device_class(self, info: DeviceClassInfo) -> bool:
        return self.devices.upsert_class(info)

    def remove_device_class(self, name: str) -> None:
        self.devices.remove_class(name)

    def replace_device_classes(self, infos: Iterable[DeviceClassInfo]) -> None:
        self.devices.replace_classes(infos)

    def upsert_resource_claim(self, claim: ResourceClaimInfo) -> LedgerChange:
        return self._devices_changed(self.devices.upsert_claim(claim))

    def remove_resource_claim(self, key: str) -> LedgerChange:
        return self._devices_changed(self.devices.remove_claim(key))

    def replace_resource_claims(self, claims: Iterable[ResourceClaimInfo]) -> LedgerChange:
        return self._devices_changed(self.devices.replace_claims(claims))

    # -- disruption budgets --------------------------------------------------------------------

    def upsert_budget(self, budget: BudgetInfo) -> None:
        self._budgets.setdefault(budget.namespace, {})[budget.key] = budget

    def remove_budget(self, key: str) -> None:
        namespace = key.partition("/")[0]
        budgets = self._budgets.get(namespace)
        if budgets is not None:
            budgets.pop(key, None)
            if not budgets:
                del self._budgets[namespace]

    def replace_budgets(self, budgets: Iterable[BudgetInfo]) -> None:
        self._budgets = {}
        for budget in budgets:
            self.upsert_budget(budget)

    def budgets_of(self, pod: PodInfo) -> list[BudgetInfo]:
        """The budgets whose selector covers ``pod``."""
        budgets = self._budgets.get(pod.namespace)
        if not budgets:
            return []
        return [b for b in budgets.values() if b.covers(pod.namespace, pod.labels)]


def _spec_changed(old: NodeInfo, new: NodeInfo) -> bool:
    return (
        old.labels != new.labels
        or old.allocatable != new.allocatable
        or old.taints != new.taints
        or old.unschedulable != new.unschedulable
        or old.ready != new.ready
    )
