"""A what-if's pods in an upstream PodGroup that names claims share them, as the resourceclaim
controller and the daemon make them share: for a PodGroup of the file, one claim made for it;
for one already in the cluster, the claim named in its status (allocated already or not), or,
not made yet, one made for it. Asked through the daemon's ``WhatIfService`` over the engine
fake."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.testing.api import FakeApi
from koordgang.testing.builders import (
    device_class,
    node,
    podgroup_claim_json,
    resource_claim_json,
    resource_slice,
    upstream_podgroup_json,
)
from koordgang.testing.claims import Claims
from koordgang.testing.harness import Harness
from koordgang.whatif.fork import BIND
from koordgang.whatif.inputs import WhatIfError
from koordgang.whatif.render import render_text
from koordgang.whatif.service import WhatIfService

PODGROUPS = "podgroups.scheduling.k8s.io"
CLAIM = "train-gpus-x7k2p"
TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: pair, namespace: ns}
spec:
  spec:
    devices:
      requests:
        - {name: gpus, exactly: {deviceClassName: gpu, count: 2}}
---
"""
PODGROUP = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ns}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
  resourceClaims: [{name: gpus, resourceClaimTemplateName: pair}]
---
"""
#: 3 pods that join PodGroup ns/train, naming its claim entry as it does.
JOINING = """
apiVersion: batch/v1
kind: Job
metadata: {name: more, namespace: ns}
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      schedulerName: koord-scheduler
      schedulingGroup: {podGroupName: train}
      resourceClaims: [{name: gpus, resourceClaimTemplateName: pair}]
      containers: [{name: main, image: x, resources: {requests: {cpu: "1"}}}]
"""


async def _ask(sched: Harness, text: str) -> dict[str, Any]:
    service = WhatIfService(
        sched.settings,
        sched.api,  # type: ignore[arg-type]  # FakeApi stands for KubeApi
        sched.daemon_state,
        clock=sched.clock,
        wall=sched.clock.wall,
    )
    return await service.answer(text)


def _cluster(sched: Harness, claims: Claims, **podgroup: Any) -> None:
    """Nodes n1 and n2 of 8 cpu and 8 GPUs each; PodGroup ns/train (``podgroup``: its
    keywords) seen by the daemon, and ``claims``."""
    sched.intake.on_object(PODGROUPS, "ADDED", upstream_podgroup_json("train", 3, **podgroup))
    sched.list(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        resource_slices=[resource_slice("n1", 8), resource_slice("n2", 8)],
        device_classes=[device_class()],
        resource_claims=claims.infos(),
    )


def _claims(api: FakeApi, *group_claim: dict[str, Any], **taken: range) -> Claims:
    """``group_claim`` (the PodGroup's, if given), and per node a claim of others allocated
    the GPUs ``gpu-<i>`` of ``taken``."""
    others = {f"others-{name}": (name, indexes) for name, indexes in taken.items()}
    claims = Claims(
        api, [*group_claim, *(resource_claim_json(n, len(i)) for n, (_, i) in others.items())]
    )
    for claim, (node_name, indexes) in others.items():
        claims.set_allocation(claim, node_name, [f"gpu-{i}" for i in indexes], [])
    return claims


async def test_a_what_if_makes_one_claim_for_a_podgroup_its_members_share(
    sched: Harness,
) -> None:
    """3 members sharing their PodGroup's claim of 2 GPUs fit where 3 claims of 2 would not:
    the what-if makes the claim once, for the PodGroup of the file, as the resourceclaim
    controller does."""
    sched.list(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        resource_slices=[resource_slice("n1", 2), resource_slice("n2", 2)],
        device_classes=[device_class()],
    )
    answer = await _ask(sched, TEMPLATE + PODGROUP + JOINING)
    [group] = answer["groups"]
    assert group["outcome"] == BIND, group
    assert len(set(group["placements"].values())) == 1
    [said] = group["podGroupClaims"]
    assert said.startswith(
        'resourceclaim ns/train-gpus-whatif of PodGroup ns/train ("gpus", to be made from '
        'template "pair"): allocated now on n'
    )
    assert said.endswith("shared by 3 pods of the file")


async def test_pods_joining_a_podgroup_go_where_its_allocated_claim_is_and_take_no_device(
    sched: Harness, api: FakeApi
) -> None:
    """PodGroup ns/train's claim holds 2 GPUs of n1, others hold its 6 more; n2 has 4 free
    GPUs. 3 pods joining the PodGroup share its claim: they go to n1, with no device more (a
    claim each, 2 GPUs apiece, would not fit anywhere)."""
    claims = _claims(api, podgroup_claim_json(CLAIM, "train", 2), n1=range(2, 8), n2=range(4))
    claims.set_allocation(CLAIM, "n1", ["gpu-0", "gpu-1"], [])
    _cluster(sched, claims, made=CLAIM)
    answer = await _ask(sched, TEMPLATE + JOINING)
    [group] = answer["groups"]
    assert group["outcome"] == BIND, group
    assert set(group["placements"].values()) == {"n1"}
    # The explanation names the PodGroup's claim, and the devices it holds already.
    [said] = group["podGroupClaims"]
    assert said.startswith(f'resourceclaim ns/{CLAIM} of PodGroup ns/train ("gpus")')
    assert said.endswith(
        "allocated already on n1: gpu.example.com/n1/gpu-0, gpu.example.com/n1/gpu-1; "
        "shared by 3 pods of the file"
    )
    assert group["devices"] == {}
    assert f"resourceclaim ns/{CLAIM} of PodGroup ns/train" in render_text(answer)


async def test_pods_joining_a_podgroup_share_its_claim_not_allocated_yet(
    sched: Harness, api: FakeApi
) -> None:
    """The PodGroup's claim is made (named in its status), not allocated: the joining pods
    allocate it once, 2 of the 2 GPUs left, all on their node; the file need not hold the
    template of a claim made already."""
    claims = _claims(api, podgroup_claim_json(CLAIM, "train", 2), n1=range(6), n2=range(8))
    _cluster(sched, claims, made=CLAIM)
    answer = await _ask(sched, JOINING)
    [group] = answer["groups"]
    assert group["outcome"] == BIND, group
    assert set(group["placements"].values()) == {"n1"}
    [said] = group["podGroupClaims"]
    assert said.startswith(f'resourceclaim ns/{CLAIM} of PodGroup ns/train ("gpus")')
    assert "allocated now on n1: gpu.example.com/n1/gpu-6, gpu.example.com/n1/gpu-7;" in said


async def test_pods_joining_a_podgroup_whose_claim_is_not_made_share_one_made_for_it(
    sched: Harness, api: FakeApi
) -> None:
    """No claim made for the PodGroup yet: the what-if makes one, for the PodGroup, from the
    file's template, as the controller would; the joining pods share its 2 GPUs."""
    _cluster(sched, _claims(api, n1=range(6), n2=range(8)))
    answer = await _ask(sched, TEMPLATE + JOINING)
    [group] = answer["groups"]
    assert group["outcome"] == BIND, group
    assert set(group["placements"].values()) == {"n1"}
    [said] = group["podGroupClaims"]
    assert said.startswith(
        'resourceclaim ns/train-gpus-whatif of PodGroup ns/train ("gpus", to be made from '
        'template "pair"): allocated now on n1'
    )
    # Without its template, the claim the controller would make cannot be read.
    with pytest.raises(WhatIfError, match="ResourceClaimTemplate ns/pair is not in the file"):
        await _ask(sched, JOINING)
