from typing import Any

import pytest

from koordgang.model.taints import (
    Taint,
    TaintError,
    Toleration,
    first_untolerated,
    parse_taints,
    parse_tolerations,
)

GPU_NO_SCHEDULE = Taint("nvidia.com/gpu", "present", "NoSchedule")
GPU_NO_EXECUTE = Taint("nvidia.com/gpu", "present", "NoExecute")
GPU_PREFER = Taint("nvidia.com/gpu", "present", "PreferNoSchedule")
DEDICATED_EMPTY_VALUE = Taint("dedicated", "", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        # Exists with an empty key tolerates every taint, whatever its effect.
        (Toleration(operator="Exists"), GPU_NO_SCHEDULE, True),
        (Toleration(operator="Exists"), GPU_NO_EXECUTE, True),
        (Toleration(operator="Exists"), DEDICATED_EMPTY_VALUE, True),
        # ...unless it names an effect.
        (Toleration(operator="Exists", effect="NoExecute"), GPU_NO_EXECUTE, True),
        (Toleration(operator="Exists", effect="NoExecute"), GPU_NO_SCHEDULE, False),
        # Exists ignores the value.
        (Toleration("nvidia.com/gpu", "Exists"), GPU_NO_SCHEDULE, True),
        (Toleration("nvidia.com/gpu", "Exists", value="other"), GPU_NO_SCHEDULE, True),
        (Toleration("other-key", "Exists"), GPU_NO_SCHEDULE, False),
        # Equal compares the value exactly.
        (Toleration("nvidia.com/gpu", "Equal", "present"), GPU_NO_SCHEDULE, True),
        (Toleration("nvidia.com/gpu", "Equal", "absent"), GPU_NO_SCHEDULE, False),
        (Toleration("nvidia.com/gpu", "Equal", "Present"), GPU_NO_SCHEDULE, False),
        (Toleration("nvidia.com/gpu", "Equal", ""), GPU_NO_SCHEDULE, False),
        (Toleration("dedicated", "Equal", ""), DEDICATED_EMPTY_VALUE, True),
        # An empty effect matches every effect.
        (Toleration("nvidia.com/gpu", "Equal", "present"), GPU_NO_EXECUTE, True),
        (Toleration("nvidia.com/gpu", "Equal", "present"), GPU_PREFER, True),
        # A named effect must be identical.
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), GPU_NO_SCHEDULE, True),
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), GPU_NO_EXECUTE, False),
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoExecute"), GPU_PREFER, False),
        # The key must be identical (case included).
        (Toleration("NVIDIA.com/gpu", "Exists"), GPU_NO_SCHEDULE, False),
        # An empty operator is Equal, as in the API.
        (Toleration("nvidia.com/gpu", "", "present"), GPU_NO_SCHEDULE, True),
        (Toleration("nvidia.com/gpu", "", "other"), GPU_NO_SCHEDULE, False),
        # Equal with an empty key matches any key with that value (Go's ToleratesTaint).
        (Toleration("", "Equal", "present"), GPU_NO_SCHEDULE, True),
        (Toleration("", "Equal", "other"), GPU_NO_SCHEDULE, False),
        # An operator Kubernetes does not know tolerates nothing.
        (Toleration("nvidia.com/gpu", "Gt", "present"), GPU_NO_SCHEDULE, False),
        (Toleration("", "exists"), GPU_NO_SCHEDULE, False),
    ],
)
def test_toleration_matches_taint_by_kubernetes_rules(
    toleration: Toleration, taint: Taint, tolerated: bool
) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_a_default_toleration_is_equal_with_empty_key_value_and_effect() -> None:
    assert Toleration() == Toleration("", "Equal", "", "", None)


def test_taint_prints_like_kubectl() -> None:
    assert str(GPU_NO_SCHEDULE) == "nvidia.com/gpu=present:NoSchedule"
    assert str(DEDICATED_EMPTY_VALUE) == "dedicated:NoSchedule"


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        ((), (), None),
        ((GPU_NO_SCHEDULE,), (), GPU_NO_SCHEDULE),
        ((GPU_NO_EXECUTE,), (), GPU_NO_EXECUTE),
        # PreferNoSchedule never keeps a pod off a node.
        ((GPU_PREFER,), (), None),
        ((GPU_PREFER, DEDICATED_EMPTY_VALUE), (), DEDICATED_EMPTY_VALUE),
        ((GPU_NO_SCHEDULE,), (Toleration("nvidia.com/gpu", "Exists"),), None),
        # Every taint needs its own toleration; the first one left over is reported.
        (
            (GPU_NO_SCHEDULE, DEDICATED_EMPTY_VALUE),
            (Toleration("nvidia.com/gpu", "Exists"),),
            DEDICATED_EMPTY_VALUE,
        ),
        (
            (DEDICATED_EMPTY_VALUE, GPU_NO_SCHEDULE),
            (Toleration("other", "Exists"),),
            DEDICATED_EMPTY_VALUE,
        ),
        (
            (GPU_NO_SCHEDULE, DEDICATED_EMPTY_VALUE),
            (Toleration("dedicated", "Exists"), Toleration("nvidia.com/gpu", "Exists")),
            None,
        ),
        ((GPU_NO_SCHEDULE, GPU_NO_EXECUTE), (Toleration(operator="Exists"),), None),
        (
            (GPU_NO_SCHEDULE, GPU_NO_EXECUTE),
            (Toleration(operator="Exists", effect="NoSchedule"),),
            GPU_NO_EXECUTE,
        ),
    ],
)
def test_first_untolerated_reports_the_first_blocking_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], expected: Taint | None
) -> None:
    assert first_untolerated(taints, tolerations) == expected


def test_first_untolerated_can_check_other_effects() -> None:
    taints = (GPU_NO_SCHEDULE, GPU_PREFER)
    assert first_untolerated(taints, (), effects=("PreferNoSchedule",)) == GPU_PREFER
    assert first_untolerated(taints, (), effects=("NoExecute",)) is None


def test_taints_parse_from_node_spec() -> None:
    raw = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "x"},
    ]
    assert parse_taints(raw) == (
        GPU_NO_SCHEDULE,
        Taint("node.kubernetes.io/unreachable", "", "NoExecute"),
    )


def test_missing_taints_parse_to_an_empty_tuple() -> None:
    assert parse_taints(None) == ()
    assert parse_tolerations(None) == ()


def test_tolerations_parse_from_pod_spec_with_equal_as_default_operator() -> None:
    raw = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "ml"},
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {"operator": "Exists"},
    ]
    assert parse_tolerations(raw) == (
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule", None),
        Toleration("dedicated", "Equal", "ml", "", None),
        Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 300),
        Toleration("", "Exists", "", "", None),
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"key": "a"}, 'expected a list, got {"key": "a"}'),
        (["a"], '[0]: expected an object, got "a"'),
        ([{"key": 5}], "[0].key: must be a string, got 5"),
        (
            [{}, {"key": "a", "effect": ["NoSchedule"]}],
            '[1].effect: must be a string, got ["NoSchedule"]',
        ),
    ],
)
def test_malformed_taints_raise_taint_error_with_the_path(raw: Any, message: str) -> None:
    with pytest.raises(TaintError) as caught:
        parse_taints(raw)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("Exists", 'expected a list, got "Exists"'),
        (
            [{"key": "a", "tolerationSeconds": "300"}],
            '[0].tolerationSeconds: must be an integer, got "300"',
        ),
        (
            [{"key": "a", "tolerationSeconds": 1.5}],
            "[0].tolerationSeconds: must be an integer, got 1.5",
        ),
        ([{"key": "a", "operator": 1}], "[0].operator: must be a string, got 1"),
    ],
)
def test_malformed_tolerations_raise_taint_error_with_the_path(raw: Any, message: str) -> None:
    with pytest.raises(TaintError) as caught:
        parse_tolerations(raw)
    assert str(caught.value) == message
