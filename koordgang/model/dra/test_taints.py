"""Device tolerations match taints as Kubernetes matches them; only NoSchedule and NoExecute
keep a device away, and NoExecute tolerated for a while only keeps it away too."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.model.dra import DeviceTaint, parse_device_taint_rule, untolerated
from koordgang.model.dra.base import DeviceId
from koordgang.model.dra.taints import parse_toleration
from koordgang.model.errors import ModelError

TAINT = DeviceTaint("example.com/drain", "true", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "example.com/drain", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "example.com/drain", "operator": "Equal", "value": "true"}, True),
        ({"key": "example.com/drain", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "example.com/drain", "value": "false"}, False),
        ({"key": "example.com/drain"}, False),
        ({"key": "example.com/other", "operator": "Exists"}, False),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "example.com/drain", "operator": "Lt", "value": "true"}, False),
    ],
)
def test_a_toleration_matches_as_a_pods_toleration_of_a_node_taint(
    toleration: dict[str, Any], tolerated: bool
) -> None:
    parsed = parse_toleration(toleration, "tolerations[0]")
    assert parsed.tolerates(TAINT) is tolerated
    assert (untolerated([TAINT], [parsed]) is None) is tolerated


@pytest.mark.parametrize("effect", ["None", "PreferNoScheduleOfALaterRelease", ""])
def test_effects_other_than_noschedule_and_noexecute_keep_nothing_away(effect: str) -> None:
    assert untolerated([DeviceTaint("k", "", effect)], []) is None


def test_noexecute_tolerated_for_a_while_only_keeps_the_device_away() -> None:
    taint = DeviceTaint("example.com/failing", "", "NoExecute")
    briefly = parse_toleration({"operator": "Exists", "tolerationSeconds": 60}, "t")
    forever = parse_toleration({"operator": "Exists"}, "t")
    assert briefly.tolerates(taint) and not briefly.keeps(taint)
    assert untolerated([taint], [briefly]) == taint
    assert untolerated([taint], [briefly, forever]) is None


def test_a_rule_selects_by_driver_pool_and_device_and_names_itself_on_its_taint() -> None:
    rule = parse_device_taint_rule(
        {
            "metadata": {"name": "drain-n1"},
            "spec": {
                "deviceSelector": {"driver": "gpu.example.com", "pool": "n1"},
                "taint": {"key": "example.com/drain", "effect": "NoExecute"},
            },
        }
    )
    assert rule.selects(DeviceId("gpu.example.com", "n1", "gpu-0"))
    assert not rule.selects(DeviceId("gpu.example.com", "n2", "gpu-0"))
    assert not rule.selects(DeviceId("nic.example.com", "n1", "gpu-0"))
    assert rule.taint.rule == "drain-n1"
    assert rule.taint.describe() == "example.com/drain:NoExecute (DeviceTaintRule drain-n1)"


def test_a_rule_without_a_taint_key_or_effect_is_refused_naming_the_field() -> None:
    with pytest.raises(ModelError, match=r"spec\.taint\.effect"):
        parse_device_taint_rule({"metadata": {"name": "r"}, "spec": {"taint": {"key": "k"}}})
