"""VolumeBinding: a pod waits until every claim it mounts exists and is bound."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.framework.cycle_state import CycleState
from koordgang.framework.interfaces import FilterPlugin, PreFilterPlugin
from koordgang.framework.status import Code
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.model.volumes import parse_claim
from koordgang.plugins.volumebinding import VolumeBinding
from koordgang.state.cache import SchedulerCache
from koordgang.state.snapshot import Snapshot
from koordgang.state.volume_claims import VolumeClaims

NOT_BINDING = "koordgang does not bind volumes"


def claim_obj(
    name: str, *, phase: str = "Bound", volume: str = "pv-1", namespace: str = "ns"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"volumeName": volume} if volume else {},
        "status": {"phase": phase},
    }


BOUND = claim_obj("data")
PENDING = claim_obj("data", phase="Pending", volume="")
#: The volume controller fills in spec.volumeName before the phase turns Bound.
HALF_BOUND = claim_obj("data", phase="Pending")
LOST = claim_obj("data", phase="Lost")
ELSEWHERE = claim_obj("data", namespace="other")


def pod(*volumes: dict[str, Any]) -> PodInfo:
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)},
        }
    )


def pvc(claim: str, volume: str = "v") -> dict[str, Any]:
    return {"name": volume, "persistentVolumeClaim": {"claimName": claim}}


def pre_filter(candidate: PodInfo, *claims: dict[str, Any]) -> tuple[Code, tuple[str, ...]]:
    store = VolumeClaims()
    for claim in claims:
        store.upsert(parse_claim(claim))
    plugin = VolumeBinding(store.claim)
    status = plugin.pre_filter(CycleState(), candidate, Snapshot(SchedulerCache()))
    if status.reasons:
        assert status.plugin == "VolumeBinding"
    return status.code, status.reasons


def unbound(names: str) -> str:
    return (
        f"pod has unbound immediate PersistentVolumeClaims; {NOT_BINDING}: "
        f"bind the {names} first, or use a scheduler that does"
    )


UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize(
    ("candidate", "claims", "code", "reasons"),
    [
        (pod(pvc("data")), [BOUND], Code.SUCCESS, ()),
        (pod(pvc("data")), [], UNRESOLVABLE, ('persistentvolumeclaim "data" not found',)),
        # Claims are looked up in the pod's namespace.
        (pod(pvc("data")), [ELSEWHERE], UNRESOLVABLE, ('persistentvolumeclaim "data" not found',)),
        (pod(pvc("data")), [PENDING], UNRESOLVABLE, (unbound('claim "data"'),)),
        (pod(pvc("data")), [HALF_BOUND], UNRESOLVABLE, (unbound('claim "data"'),)),
        (pod(pvc("data")), [LOST], UNRESOLVABLE, (unbound('claim "data"'),)),
        # Every unbound claim is named.
        (
            pod(pvc("data"), pvc("logs", "w"), pvc("scratch", "x")),
            [PENDING, claim_obj("logs"), claim_obj("scratch", phase="Pending", volume="")],
            UNRESOLVABLE,
            (unbound('claims "data", "scratch"'),),
        ),
        # A missing claim is reported before unbound ones, wherever it comes in the list.
        (
            pod(pvc("data"), pvc("logs", "w")),
            [PENDING],
            UNRESOLVABLE,
            ('persistentvolumeclaim "logs" not found',),
        ),
        # An ephemeral volume's claim is named <pod>-<volume> by its controller.
        (
            pod({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}),
            [claim_obj("p-scratch")],
            Code.SUCCESS,
            (),
        ),
        (
            pod({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}),
            [],
            UNRESOLVABLE,
            ('persistentvolumeclaim "p-scratch" not found',),
        ),
        # Volumes without a claim need nothing bound, and leave the plugin out.
        (pod({"name": "tmp", "emptyDir": {}}), [], Code.SKIP, ()),
        (pod(), [], Code.SKIP, ()),
    ],
)
def test_a_pod_needs_every_claim_to_exist_and_be_bound(
    candidate: PodInfo,
    claims: list[dict[str, Any]],
    code: Code,
    reasons: tuple[str, ...],
) -> None:
    assert pre_filter(candidate, *claims) == (code, reasons)


def test_volume_binding_is_a_pre_filter_only() -> None:
    plugin = VolumeBinding()
    assert isinstance(plugin, PreFilterPlugin)
    assert not isinstance(plugin, FilterPlugin)
    assert plugin.name == "VolumeBinding"
