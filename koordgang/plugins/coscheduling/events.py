"""Coscheduling's events: pods and group objects of every gang API kept in step in the gang
registry, and what users are told of them (a gang declared wrongly, a pod naming gangs in two
APIs, a field not used, a gang that fell below its minimum)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import structlog

from koordgang.framework.handle import Handle
from koordgang.framework.report import Report, WatchedResource
from koordgang.gangapis import GangApi, composite
from koordgang.gangapis.composite import Composites
from koordgang.gangapis.kubernetes import API as KUBERNETES
from koordgang.model.gang import PodGroupInfo
from koordgang.model.objects import ObjectRef
from koordgang.model.pod import PodInfo
from koordgang.state.gangs import Gang, GangRegistry

log = structlog.get_logger("koordgang.gangs")

#: Members a kubelet refused at admission after they were bound, by the kubelet's reason.
ADMISSION_REFUSALS = "koordgang_admission_refusals"


class GangEvents:
    def __init__(
        self,
        handle: Handle,
        gangs: GangRegistry,
        apis: Sequence[GangApi],
        composites: Composites,
    ) -> None:
        self.handle = handle
        self.gangs = gangs
        self.apis = tuple(apis)
        self.composites = composites
        self._api_named = {api.name: api for api in self.apis}
        self._api_of_resource = {
            api.resource.id: api for api in self.apis if api.resource is not None
        }
        #: Group objects told that a field of theirs is ignored (by uid), pods told that they
        #: name gangs in two APIs: each is told once.
        self._told_ignored: set[str] = set()
        self._told_conflict: set[str] = set()

    def on_pod(self, old: PodInfo | None, pod: PodInfo | None) -> None:
        if pod is None:
            if old is not None:
                self._pod_deleted(old.uid)
            return
        before = self.gangs.gang_of(pod.uid)
        gang = self.gangs.on_pod(pod)
        if gang is not None:
            self._tell_refusal(old, pod, gang)
        for changed in (before, gang):
            if changed is not None:
                self.gangs.touch(changed.key)
                self._check_minimum(changed)
        for timed_out in self.gangs.take_timed_out_by_event():
            # PreEnqueue refuses its members now: those already queued leave the queue.
            self.handle.activate(timed_out.pending_members())
        self._tell_conflict(pod)
        if gang is not None:
            self._tell_issues(gang, pod)

    def _tell_refusal(self, old: PodInfo | None, pod: PodInfo, gang: Gang) -> None:
        """A member the kubelet refused after it was bound (another scheduler's pod took the
        room first, or a device failed) is counted and told, on the pod and on its gang's
        group object: the gang ran whole in koordgang's view, and now lacks it until its job
        controller makes a replacement, which is placed as the gang's member."""
        reason = pod.admission_refusal
        if not reason or (old is not None and old.admission_refusal):
            return
        self.handle.record(ADMISSION_REFUSALS, 1.0, reason)
        gang.last_refusal = f"{pod.name} on node {pod.node_name or '?'}: {reason}"
        message = (
            f"member {pod.namespace}/{pod.name} of gang {gang.key} was refused by the kubelet "
            f"on node {pod.node_name or '?'} ({reason}): the node no longer had room when the "
            "pod arrived; its replacement will be placed as the gang's member"
        )
        log.warning("member refused by the kubelet", gang=gang.key, pod=pod.name, reason=reason)
        self.handle.report(Report.for_pod(pod, "Warning", "AdmissionRefused", message, always=True))
        ref = self._object_ref(gang.podgroup)
        if ref is not None:
            self.handle.report(Report(ref, "Warning", "AdmissionRefused", message))

    def _tell_issues(self, gang: Gang, pod: PodInfo) -> None:
        """A pending member of a gang declared wrongly is told what is wrong (the reporter
        writes a repeated text once). A PodGroup that has not arrived yet is not a mistake:
        the pod is told it waits, and told this when the PodGroup comes."""
        if pod.node_name or pod.is_terminal or gang.needs_podgroup():
            return
        issues = [issue.message() for issue in gang.spec.issues]
        if issues:
            # One Event for all of them, written even if the pod gets bound meanwhile: the
            # settings are still wrong.
            self.handle.report(
                Report.for_pod(pod, "Warning", "InvalidGangConfig", "; ".join(issues), always=True)
            )

    def _tell_conflict(self, pod: PodInfo) -> None:
        refs = self.gangs.conflicts.get(pod.uid)
        if not refs or pod.uid in self._told_conflict or pod.node_name:
            return
        used, *others = refs
        # The Job controller's own PodGroup (1.37 makes one for every Job), when it is no
        # gang, is no conflict: the pod's other gang is the one meant.
        others = [
            ref
            for ref in others
            if ref.api != KUBERNETES
            or ((known := self.gangs.podgroup(KUBERNETES, ref.key)) is not None and known.is_gang)
        ]
        if not others:
            return
        self._told_conflict.add(pod.uid)
        named = ", ".join(f"{ref.key} ({ref.api})" for ref in others)
        self.handle.report(
            Report.for_pod(
                pod,
                "Warning",
                "GangApiConflict",
                f"the pod names gangs in more than one API: {used.key} ({used.api}) and "
                f"{named}; it belongs to {used.key} ({used.api}), the first in the documented "
                "order",
                always=True,
            )
        )

    def _check_minimum(self, gang: Gang) -> None:
        """A gang that ran whole and falls below its minimum says so once (an Event on its
        group object, or on its members without one); restarting the job is its
        controller's work."""
        below = gang.below_minimum()
        if not below:
            gang.told_below_minimum = False
            return
        if gang.told_below_minimum:
            return
        gang.told_below_minimum = True
        minimum = gang.spec.min_available or 0
        alive = sum(1 for p in gang.bound_members() if not p.is_terminating)
        message = (
            f"gang {gang.key} fell below its minimum: {alive} of {minimum} members alive on "
            "nodes; its job controller must replace the others"
        )
        if gang.last_refusal:
            message += f" (the kubelet refused {gang.last_refusal})"
        log.warning("gang below its minimum", gang=gang.key, alive=alive, minimum=minimum)
        ref = self._object_ref(gang.podgroup)
        if ref is not None:
            self.handle.report(Report(ref, "Warning", "GangBelowMinimum", message))
            return
        rep = gang.representative()
        if rep is not None:
            self.handle.report(
                Report.for_pod(rep, "Warning", "GangBelowMinimum", message, always=True)
            )

    def _object_ref(self, podgroup: PodGroupInfo | None) -> ObjectRef | None:
        if podgroup is None:
            return None
        api = self._api_named.get(podgroup.api)
        if api is None or api.resource is None:
            return None
        return ObjectRef(
            api.resource.kind,
            podgroup.namespace,
            podgroup.name,
            podgroup.uid,
            api_version=podgroup.api_version or api.resource.api_version,
        )

    def _pod_deleted(self, uid: str) -> None:
        self._told_conflict.discard(uid)
        before = self.gangs.gang_of(uid)
        was_timed_out = before is not None and before.timed_out
        gang = self.gangs.on_pod_deleted(uid)
        if gang is None:
            return
        self.gangs.touch(gang.key)
        self._check_minimum(gang)
        if was_timed_out and not gang.timed_out:
            # The user deleted the timed-out members: the others get a fresh start.
            self.handle.activate(gang.pending_members())
            self.handle.request_move()

    def watches(self) -> Sequence[WatchedResource]:
        resources = [api.resource for api in self.apis if api.resource is not None]
        return resources + [related for api in self.apis for related in api.related]

    def on_object(self, kind: str, event: str, obj: Mapping[str, Any]) -> bool:
        if kind == composite.RESOURCE.id and KUBERNETES in self._api_named:
            return self._on_composite(event, obj)
        api = self._api_of_resource.get(kind)
        if api is None:
            return False
        podgroup = api.parse(obj)
        if api.name == KUBERNETES:
            forest = self.gangs.composites
            if event == "DELETED":
                forest.unlink_podgroup(podgroup.key)
            else:
                forest.link_podgroup(podgroup.key, podgroup.namespace, podgroup.policy.parent)
        before = self.gangs.podgroup(api.name, podgroup.key)
        if event != "DELETED" and before is not None and _same_but_status(before, podgroup):
            # Most updates are status writes (ours among them): keep the newest status, and
            # leave parked pods where they are.
            self.gangs.on_podgroup_status(podgroup)
            return False
        if event == "DELETED":
            self._told_ignored.discard(podgroup.uid)
            gang = self.gangs.on_podgroup_deleted(podgroup.key, api.name)
            if gang is not None:
                self.gangs.touch(gang.key)
            return True
        gang = self.gangs.on_podgroup(podgroup)
        if gang is not None:
            self.gangs.touch(gang.key)
            # Members that came before their PodGroup hear of its mistakes now.
            for member in gang.live_members():
                self._tell_issues(gang, member)
        ref = self._object_ref(podgroup)
        if ref is None:
            return True
        if podgroup.issues:
            message = "; ".join(issue.message() for issue in podgroup.issues)
            self.handle.report(Report(ref, "Warning", "InvalidGangConfig", message))
        if podgroup.ignored and podgroup.uid not in self._told_ignored:
            self._told_ignored.add(podgroup.uid)
            fields = ", ".join(f'{key}="{value}"' for key, value in podgroup.ignored.items())
            self.handle.report(
                Report(
                    ref,
                    "Normal",
                    "FieldIgnored",
                    f"{fields}: not used by koord-scheduler; a gang is ordered by its "
                    "pods' priority (spec.priority) and arrival",
                )
            )
        if gang is None:
            other = self.gangs.get(podgroup.key)
            if other is not None:
                self.handle.report(
                    Report(
                        ref,
                        "Warning",
                        "GangApiConflict",
                        f"gang {podgroup.key} is declared in {other.api} by its pods; this "
                        f"{api.name} object is not used",
                    )
                )
        return True

    def _on_composite(self, event: str, obj: Mapping[str, Any]) -> bool:
        change = self.composites.on_object(event, obj)
        if change is None:
            return False  # its status only (ours among it)
        for report in change.reports:
            self.handle.report(report)
        # Its PodGroups' members may be tried (or told) differently now.
        for gang in change.gangs:
            self.gangs.touch(gang.key)
            self.handle.activate(gang.pending_members())
        return True


def _same_but_status(before: PodGroupInfo, after: PodGroupInfo) -> bool:
    return replace(before, status=after.status, resource_version=after.resource_version) == after
