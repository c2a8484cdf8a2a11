"""A what-if's pods that join an upstream PodGroup already in the cluster (not in the file)
share its claims, as the resourceclaim controller and the daemon make them share: the claim
named in the PodGroup's status (allocated already or not), or, not made yet, one claim made for
the PodGroup. Asked through the daemon's ``WhatIfService`` over the engine fake."""

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
from koordgang.whatif.fork import BIND, DaemonState
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
    framework = sched.framework
    service = WhatIfService(
        sched.settings,
        sched.api,  # type: ignore[arg-type]  # FakeApi stands for KubeApi
        lambda: DaemonState(
            sched.cache,
            sched.scheduler.stores,
            sched.intake.objects.items(),
            framework.waiting,
            framework.nominations,
            framework.carried(),
        ),
        clock=sched.clock,
        wall=sched.clock.wall,
    )
    return await service.answer(text)


def _cluster(sched: Harness, api: FakeApi, claims: list[dict[str, Any]], **podgroup: Any) -> None:
    """Nodes n1 and n2 of 8 cpu and 8 GPUs each; PodGroup ns/train (``podgroup``: its
    keywords) seen by the daemon, and ``claims``."""
    sched.intake.on_object(PODGROUPS, "ADDED", upstream_podgroup_json("train", 3, **podgroup))
    sched.list(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        resource_slices=[resource_slice("n1", 8), resource_slice("n2", 8)],
        device_classes=[device_class()],
        resource_claims=Claims(api, claims).infos(),
    )


def _allocated(name: str, node_name: str, devices: list[int], **kwargs: Any) -> dict[str, Any]:
    """``resource_claim_json``'s claim (or ``podgroup_claim_json``'s, given ``podgroup``),
    allocated ``devices`` on ``node_name``."""
    status = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpus",
                        "driver": "gpu.example.com",
                        "pool": node_name,
                        "device": f"gpu-{i}",
                    }
                    for i in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            },
        }
    }
    if "podgroup" in kwargs:
        return podgroup_claim_json(name, kwargs["podgroup"], len(devices), status=status)
    return resource_claim_json(name, len(devices), status=status)


async def test_pods_joining_a_podgroup_go_where_its_allocated_claim_is_and_take_no_device(
    sched: Harness, api: FakeApi
) -> None:
    """PodGroup ns/train's claim holds 2 GPUs of n1, others hold its 6 more; n2 has 4 free
    GPUs. 3 pods joining the PodGroup share its claim: they go to n1, with no device more (a
    claim each, 2 GPUs apiece, would not fit anywhere)."""
    _cluster(
        sched,
        api,
        [
            _allocated(CLAIM, "n1", [0, 1], podgroup="train"),
            _allocated("others", "n1", [2, 3, 4, 5, 6, 7]),
            _allocated("n2-others", "n2", [0, 1, 2, 3]),
        ],
        made=CLAIM,
    )
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
    _cluster(
        sched,
        api,
        [
            podgroup_claim_json(CLAIM, "train", 2),
            _allocated("others", "n1", [0, 1, 2, 3, 4, 5]),
            _allocated("n2-others", "n2", list(range(8))),
        ],
        made=CLAIM,
    )
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
    _cluster(
        sched,
        api,
        [_allocated("others", "n1", [0, 1, 2, 3, 4, 5]), _allocated("n2", "n2", list(range(8)))],
    )
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
