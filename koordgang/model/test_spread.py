from typing import Any

import pytest

from koordgang.model.errors import ModelError
from koordgang.model.labels import LabelSelector, LabelSelectorError, LabelSelectorRequirement
from koordgang.model.spread import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    SpreadConstraintError,
    TopologySpreadConstraint,
    parse_spread_constraints,
)

ZONE = "topology.kubernetes.io/zone"
WEB = LabelSelector((("app", "web"),))
POD_LABELS = {"app": "web", "pod-template-hash": "5d8f"}
HASH_5D8F = LabelSelectorRequirement("pod-template-hash", "In", ("5d8f",))


def constraint(**fields: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **fields,
    }


def parse_one(raw: dict[str, Any], labels: dict[str, str] = POD_LABELS) -> TopologySpreadConstraint:
    (parsed,) = parse_spread_constraints({"topologySpreadConstraints": [raw]}, labels)
    return parsed


def test_the_policies_default_to_honor_affinity_and_ignore_taints() -> None:
    assert parse_one(constraint()) == TopologySpreadConstraint(
        max_skew=1,
        topology_key=ZONE,
        when_unsatisfiable=DO_NOT_SCHEDULE,
        selector=WEB,
        min_domains=None,
        node_affinity_policy=HONOR,
        node_taints_policy=IGNORE,
    )


def test_constructed_constraints_get_the_same_defaults() -> None:
    made = TopologySpreadConstraint(1, ZONE, DO_NOT_SCHEDULE, WEB)
    assert (made.min_domains, made.node_affinity_policy, made.node_taints_policy) == (
        None,
        "Honor",
        "Ignore",
    )


def test_every_field_of_a_constraint_parses() -> None:
    raw = constraint(
        maxSkew=3,
        topologyKey="kubernetes.io/hostname",
        minDomains=4,
        nodeAffinityPolicy="Ignore",
        nodeTaintsPolicy="Honor",
        labelSelector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
    )
    assert parse_one(raw) == TopologySpreadConstraint(
        3,
        "kubernetes.io/hostname",
        DO_NOT_SCHEDULE,
        LabelSelector(match_expressions=(LabelSelectorRequirement("app", "In", ("web",)),)),
        4,
        IGNORE,
        HONOR,
    )


def test_constraints_keep_their_order() -> None:
    raw = {
        "topologySpreadConstraints": [
            constraint(),
            constraint(topologyKey="rack", whenUnsatisfiable="ScheduleAnyway"),
        ]
    }
    parsed = parse_spread_constraints(raw, POD_LABELS)
    assert [(c.topology_key, c.when_unsatisfiable) for c in parsed] == [
        (ZONE, DO_NOT_SCHEDULE),
        ("rack", SCHEDULE_ANYWAY),
    ]


@pytest.mark.parametrize(
    "spec",
    [{}, {"topologySpreadConstraints": None}, {"topologySpreadConstraints": []}],
)
def test_a_pod_without_constraints_has_none(spec: dict[str, Any]) -> None:
    assert parse_spread_constraints(spec, POD_LABELS) == ()


@pytest.mark.parametrize(
    ("fields", "labels", "expected"),
    [
        ({}, POD_LABELS, WEB),
        ({"matchLabelKeys": ["pod-template-hash"]}, POD_LABELS, WEB.with_requirements([HASH_5D8F])),
        # Keys the pod does not carry are ignored.
        ({"matchLabelKeys": ["pod-template-hash"]}, {"app": "web"}, WEB),
        (
            {"matchLabelKeys": ["missing", "pod-template-hash"]},
            POD_LABELS,
            WEB.with_requirements([HASH_5D8F]),
        ),
        # A null selector matches no pod, unless the keys give it requirements of its own.
        ({"labelSelector": None}, POD_LABELS, None),
        ({"labelSelector": None, "matchLabelKeys": ["missing"]}, POD_LABELS, None),
        (
            {"labelSelector": None, "matchLabelKeys": ["pod-template-hash"]},
            POD_LABELS,
            LabelSelector(match_expressions=(HASH_5D8F,)),
        ),
        # An empty selector matches every pod.
        ({"labelSelector": {}}, POD_LABELS, LabelSelector()),
    ],
)
def test_match_label_keys_are_merged_into_the_selector_with_the_pods_own_values(
    fields: dict[str, Any], labels: dict[str, str], expected: LabelSelector | None
) -> None:
    assert parse_one(constraint(**fields), labels).selector == expected


PATH = "spec.topologySpreadConstraints"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"topologySpreadConstraints": {}}, f"{PATH}: expected a list, got {{}}"),
        ({"topologySpreadConstraints": ["zone"]}, f'{PATH}[0]: expected an object, got "zone"'),
        (
            {"topologySpreadConstraints": [constraint(), constraint(maxSkew=0)]},
            f"{PATH}[1].maxSkew: must be an integer of at least 1, got 0",
        ),
        (
            {"topologySpreadConstraints": [constraint(maxSkew=None)]},
            f"{PATH}[0].maxSkew: must be an integer of at least 1, got null",
        ),
        (
            {"topologySpreadConstraints": [constraint(maxSkew="1")]},
            f'{PATH}[0].maxSkew: must be an integer of at least 1, got "1"',
        ),
        (
            {"topologySpreadConstraints": [constraint(maxSkew=-1)]},
            f"{PATH}[0].maxSkew: must be an integer of at least 1, got -1",
        ),
        (
            {"topologySpreadConstraints": [constraint(topologyKey="")]},
            f'{PATH}[0].topologyKey: must be a non-empty string, got ""',
        ),
        (
            {"topologySpreadConstraints": [constraint(topologyKey=None)]},
            f"{PATH}[0].topologyKey: must be a non-empty string, got null",
        ),
        (
            {"topologySpreadConstraints": [constraint(whenUnsatisfiable=None)]},
            f"{PATH}[0].whenUnsatisfiable: must be one of DoNotSchedule, ScheduleAnyway, got null",
        ),
        (
            {"topologySpreadConstraints": [constraint(whenUnsatisfiable="doNotSchedule")]},
            f"{PATH}[0].whenUnsatisfiable: must be one of DoNotSchedule, ScheduleAnyway, "
            'got "doNotSchedule"',
        ),
        (
            {"topologySpreadConstraints": [constraint(minDomains=0)]},
            f"{PATH}[0].minDomains: must be an integer of at least 1, got 0",
        ),
        (
            {"topologySpreadConstraints": [constraint(minDomains=2.0)]},
            f"{PATH}[0].minDomains: must be an integer of at least 1, got 2.0",
        ),
        (
            {
                "topologySpreadConstraints": [
                    constraint(whenUnsatisfiable="ScheduleAnyway", minDomains=2)
                ]
            },
            f"{PATH}[0].minDomains: may only be set when whenUnsatisfiable is DoNotSchedule, "
            "not ScheduleAnyway",
        ),
        (
            {"topologySpreadConstraints": [constraint(nodeAffinityPolicy="honor")]},
            f'{PATH}[0].nodeAffinityPolicy: must be one of Honor, Ignore, got "honor"',
        ),
        (
            {"topologySpreadConstraints": [constraint(nodeTaintsPolicy="")]},
            f'{PATH}[0].nodeTaintsPolicy: must be one of Honor, Ignore, got ""',
        ),
        (
            {"topologySpreadConstraints": [constraint(labelSelector={"matchLabels": "app"})]},
            f'{PATH}[0].labelSelector.matchLabels: expected an object, got "app"',
        ),
        (
            {
                "topologySpreadConstraints": [
                    constraint(labelSelector={"matchExpressions": [{"key": "a", "operator": "In"}]})
                ]
            },
            f"{PATH}[0].labelSelector.matchExpressions[0].values: "
            "must not be empty for operator In",
        ),
        (
            {"topologySpreadConstraints": [constraint(matchLabelKeys="pod-template-hash")]},
            f'{PATH}[0].matchLabelKeys: expected a list, got "pod-template-hash"',
        ),
        (
            {"topologySpreadConstraints": [constraint(matchLabelKeys=["a", 2])]},
            f"{PATH}[0].matchLabelKeys[1]: must be a string, got 2",
        ),
    ],
)
def test_malformed_constraints_raise_an_error_naming_the_field(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ModelError) as caught:
        parse_spread_constraints(spec, POD_LABELS)
    assert str(caught.value) == message
    assert caught.value.path == message.split(": ", 1)[0]


def test_a_bad_selector_raises_label_selector_error_and_a_bad_field_spread_error() -> None:
    with pytest.raises(LabelSelectorError):
        parse_spread_constraints(
            {"topologySpreadConstraints": [constraint(labelSelector="app")]}, {}
        )
    with pytest.raises(SpreadConstraintError):
        parse_spread_constraints({"topologySpreadConstraints": [constraint(maxSkew=0)]}, {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, ZONE, DO_NOT_SCHEDULE, WEB), "maxSkew: must be an integer of at least 1, got 0"),
        ((1, "", DO_NOT_SCHEDULE, WEB), 'topologyKey: must be a non-empty string, got ""'),
        (
            (1, ZONE, "Never", WEB),
            'whenUnsatisfiable: must be one of DoNotSchedule, ScheduleAnyway, got "Never"',
        ),
        (
            (1, ZONE, SCHEDULE_ANYWAY, WEB, 1),
            "minDomains: may only be set when whenUnsatisfiable is DoNotSchedule, "
            "not ScheduleAnyway",
        ),
        (
            (1, ZONE, DO_NOT_SCHEDULE, WEB, None, "Always"),
            'nodeAffinityPolicy: must be one of Honor, Ignore, got "Always"',
        ),
        (
            (1, ZONE, DO_NOT_SCHEDULE, WEB, None, HONOR, "Never"),
            'nodeTaintsPolicy: must be one of Honor, Ignore, got "Never"',
        ),
    ],
)
def test_constructed_constraints_are_validated_too(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(SpreadConstraintError) as caught:
        TopologySpreadConstraint(*args)
    assert str(caught.value) == message


def test_min_domains_is_accepted_with_do_not_schedule() -> None:
    assert parse_one(constraint(minDomains=1)).min_domains == 1


def test_equal_constraints_hash_equal() -> None:
    raw = constraint(matchLabelKeys=["pod-template-hash"])
    assert hash(parse_one(raw)) == hash(parse_one(raw))
    assert parse_one(raw) != parse_one(constraint())
