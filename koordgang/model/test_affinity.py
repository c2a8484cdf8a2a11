from typing import Any

import pytest

from koordgang.model.affinity import (
    AffinityError,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    node_matches,
    parse_node_selector,
    parse_preferred_terms,
)

LABELS = {
    "zone": "a",
    "gpu-count": "8",
    "negative": "-3",
    "signed": "+4",
    "model": "V100",
    "not-a-number": "eight",
    "spaced": " 8",
    "huge": "99999999999999999999",
}


@pytest.mark.parametrize(
    ("requirement", "matched"),
    [
        (NodeSelectorRequirement("zone", "In", ("a", "b")), True),
        (NodeSelectorRequirement("zone", "In", ("b",)), False),
        (NodeSelectorRequirement("missing", "In", ("a",)), False),
        (NodeSelectorRequirement("zone", "In", ("A",)), False),
        (NodeSelectorRequirement("zone", "NotIn", ("b", "c")), True),
        (NodeSelectorRequirement("zone", "NotIn", ("a",)), False),
        # A node without the label is not in any set of values.
        (NodeSelectorRequirement("missing", "NotIn", ("a",)), True),
        (NodeSelectorRequirement("zone", "Exists"), True),
        (NodeSelectorRequirement("missing", "Exists"), False),
        (NodeSelectorRequirement("zone", "DoesNotExist"), False),
        (NodeSelectorRequirement("missing", "DoesNotExist"), True),
        (NodeSelectorRequirement("gpu-count", "Gt", ("4",)), True),
        (NodeSelectorRequirement("gpu-count", "Gt", ("8",)), False),
        (NodeSelectorRequirement("gpu-count", "Gt", ("9",)), False),
        (NodeSelectorRequirement("gpu-count", "Gt", ("-1",)), True),
        (NodeSelectorRequirement("gpu-count", "Lt", ("9",)), True),
        (NodeSelectorRequirement("gpu-count", "Lt", ("8",)), False),
        (NodeSelectorRequirement("gpu-count", "Lt", ("2",)), False),
        (NodeSelectorRequirement("negative", "Lt", ("0",)), True),
        (NodeSelectorRequirement("negative", "Gt", ("-4",)), True),
        (NodeSelectorRequirement("signed", "Gt", ("3",)), True),
        # Gt and Lt need the label to exist and hold a 64-bit integer.
        (NodeSelectorRequirement("missing", "Gt", ("0",)), False),
        (NodeSelectorRequirement("missing", "Lt", ("0",)), False),
        (NodeSelectorRequirement("not-a-number", "Gt", ("0",)), False),
        (NodeSelectorRequirement("not-a-number", "Lt", ("100",)), False),
        (NodeSelectorRequirement("model", "Lt", ("100",)), False),
        (NodeSelectorRequirement("spaced", "Gt", ("0",)), False),
        (NodeSelectorRequirement("huge", "Gt", ("0",)), False),
    ],
)
def test_requirement_matches_labels_by_operator(
    requirement: NodeSelectorRequirement, matched: bool
) -> None:
    assert requirement.matches(LABELS) is matched


@pytest.mark.parametrize(
    ("key", "operator", "values", "message"),
    [
        (
            "zone",
            "Equals",
            ("a",),
            'operator: unknown operator "Equals" (expected one of In, NotIn, Exists, '
            "DoesNotExist, Gt, Lt)",
        ),
        ("zone", "in", ("a",), 'operator: unknown operator "in"'),
        ("zone", "In", (), "values: must not be empty for operator In"),
        ("zone", "NotIn", (), "values: must not be empty for operator NotIn"),
        ("zone", "Exists", ("a",), 'values: must be empty for operator Exists, got ["a"]'),
        ("zone", "DoesNotExist", ("a",), "values: must be empty for operator DoesNotExist"),
        ("n", "Gt", (), "values: must be a single integer for operator Gt, got []"),
        ("n", "Gt", ("1", "2"), 'values: must be a single integer for operator Gt, got ["1", "2"]'),
        ("n", "Lt", ("1.5",), 'values: must be a single integer for operator Lt, got ["1.5"]'),
        ("n", "Lt", ("ten",), 'values: must be a single integer for operator Lt, got ["ten"]'),
    ],
)
def test_invalid_requirements_are_rejected_like_the_api_server_does(
    key: str, operator: str, values: tuple[str, ...], message: str
) -> None:
    with pytest.raises(AffinityError) as caught:
        NodeSelectorRequirement(key, operator, values)
    assert str(caught.value).startswith(message)


def test_requirement_values_given_as_a_list_are_stored_as_a_tuple() -> None:
    requirement = NodeSelectorRequirement("zone", "In", ["a"])  # type: ignore[arg-type]
    assert requirement.values == ("a",)
    assert hash(requirement) == hash(NodeSelectorRequirement("zone", "In", ("a",)))


def test_an_empty_term_matches_no_node() -> None:
    assert NodeSelectorTerm().matches("node-1", LABELS) is False


def test_a_selector_without_terms_matches_no_node() -> None:
    assert NodeSelector().matches("node-1", LABELS) is False


def test_requirements_in_a_term_must_all_hold() -> None:
    term = NodeSelectorTerm(
        (
            NodeSelectorRequirement("zone", "In", ("a",)),
            NodeSelectorRequirement("gpu-count", "Gt", ("8",)),
        )
    )
    assert term.matches("node-1", LABELS) is False
    assert term.matches("node-1", {**LABELS, "gpu-count": "16"}) is True


def test_terms_of_a_selector_are_alternatives() -> None:
    selector = NodeSelector(
        (
            NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("b",)),)),
            NodeSelectorTerm((NodeSelectorRequirement("model", "In", ("V100",)),)),
        )
    )
    assert selector.matches("node-1", LABELS) is True
    assert selector.matches("node-1", {"zone": "a", "model": "P100"}) is False


def test_an_empty_term_next_to_a_matching_one_does_not_block_it() -> None:
    selector = NodeSelector(
        (NodeSelectorTerm(), NodeSelectorTerm((NodeSelectorRequirement("zone", "Exists"),)))
    )
    assert selector.matches("node-1", LABELS) is True


@pytest.mark.parametrize(
    ("operator", "node_name", "matched"),
    [
        ("In", "node-1", True),
        ("In", "node-2", False),
        ("NotIn", "node-1", False),
        ("NotIn", "node-2", True),
    ],
)
def test_match_fields_select_nodes_by_name(operator: str, node_name: str, matched: bool) -> None:
    term = NodeSelectorTerm(
        match_fields=(NodeSelectorRequirement("metadata.name", operator, ("node-1",)),)
    )
    assert term.matches(node_name, {}) is matched


def test_match_fields_and_expressions_in_one_term_must_both_hold() -> None:
    term = NodeSelectorTerm(
        (NodeSelectorRequirement("zone", "In", ("a",)),),
        (NodeSelectorRequirement("metadata.name", "In", ("node-1",)),),
    )
    assert term.matches("node-1", LABELS) is True
    assert term.matches("node-2", LABELS) is False
    assert term.matches("node-1", {"zone": "b"}) is False


def test_match_fields_do_not_read_labels() -> None:
    term = NodeSelectorTerm(
        match_fields=(NodeSelectorRequirement("metadata.name", "In", ("node-1",)),)
    )
    assert term.matches("node-2", {"metadata.name": "node-1"}) is False


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (
            NodeSelectorRequirement("metadata.namespace", "In", ("x",)),
            'matchFields[0].key: unsupported field "metadata.namespace" (only metadata.name is)',
        ),
        (
            NodeSelectorRequirement("metadata.name", "Exists"),
            "matchFields[0].operator: operator Exists is not supported for node fields "
            "(use In or NotIn)",
        ),
        (
            NodeSelectorRequirement("metadata.name", "In", ("a", "b")),
            'matchFields[0].values: must hold exactly one node name, got ["a", "b"]',
        ),
    ],
)
def test_unsupported_match_fields_are_rejected(
    requirement: NodeSelectorRequirement, message: str
) -> None:
    with pytest.raises(AffinityError) as caught:
        NodeSelectorTerm(match_fields=(requirement,))
    assert str(caught.value) == message


def test_node_selector_parses_from_required_node_affinity() -> None:
    raw = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a", "b"]},
                    {"key": "gpu-count", "operator": "Gt", "values": ["3"]},
                    {"key": "spot", "operator": "DoesNotExist"},
                ]
            },
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-9"]}]},
        ]
    }
    assert parse_node_selector(raw) == NodeSelector(
        (
            NodeSelectorTerm(
                (
                    NodeSelectorRequirement("zone", "In", ("a", "b")),
                    NodeSelectorRequirement("gpu-count", "Gt", ("3",)),
                    NodeSelectorRequirement("spot", "DoesNotExist", ()),
                )
            ),
            NodeSelectorTerm(
                match_fields=(NodeSelectorRequirement("metadata.name", "In", ("node-9",)),)
            ),
        )
    )


@pytest.mark.parametrize(
    "raw",
    [{}, {"nodeSelectorTerms": None}, {"nodeSelectorTerms": []}],
)
def test_a_parsed_selector_without_terms_matches_nothing(raw: dict[str, Any]) -> None:
    selector = parse_node_selector(raw)
    assert selector.terms == ()
    assert selector.matches("node-1", LABELS) is False


def test_a_parsed_empty_term_matches_nothing() -> None:
    selector = parse_node_selector({"nodeSelectorTerms": [{}]})
    assert selector.terms == (NodeSelectorTerm(),)
    assert selector.matches("node-1", LABELS) is False


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {
                "nodeSelectorTerms": [
                    {},
                    {"matchExpressions": [{"key": "zone", "operator": "Equal", "values": ["a"]}]},
                ]
            },
            'nodeSelectorTerms[1].matchExpressions[0].operator: unknown operator "Equal" '
            "(expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt)",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "values": ["a"]}]}]},
            "nodeSelectorTerms[0].matchExpressions[0].operator: must be one of In, NotIn, Exists, "
            "DoesNotExist, Gt, Lt, got null",
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [{"operator": "Exists"}]}]},
            "nodeSelectorTerms[0].matchExpressions[0].key: must be a non-empty string, got null",
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["x"]}]}
                ]
            },
            "nodeSelectorTerms[0].matchExpressions[0].values: "
            'must be a single integer for operator Gt, got ["x"]',
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "n", "operator": "In", "values": [1]}]}
                ]
            },
            "nodeSelectorTerms[0].matchExpressions[0].values[0]: must be a string, got 1",
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "n", "operator": "In", "values": "a"}]}
                ]
            },
            'nodeSelectorTerms[0].matchExpressions[0].values: expected a list, got "a"',
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["u"]}]}
                ]
            },
            "nodeSelectorTerms[0].matchFields[0].key: "
            'unsupported field "metadata.uid" (only metadata.name is)',
        ),
        ({"nodeSelectorTerms": {"a": 1}}, 'nodeSelectorTerms: expected a list, got {"a": 1}'),
        ({"nodeSelectorTerms": ["x"]}, 'nodeSelectorTerms[0]: expected an object, got "x"'),
        ("zone=a", 'expected an object, got "zone=a"'),
    ],
)
def test_malformed_selectors_raise_affinity_error_with_the_field_path(
    raw: Any, message: str
) -> None:
    with pytest.raises(AffinityError) as caught:
        parse_node_selector(raw)
    assert str(caught.value) == message


def test_affinity_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        NodeSelectorRequirement("a", "Like", ())


ZONE_A = NodeSelector((NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("a",)),)),))


@pytest.mark.parametrize(
    ("node_selector", "required", "labels", "matched"),
    [
        ({}, None, {}, True),
        ({"zone": "a"}, None, {"zone": "a", "x": "y"}, True),
        ({"zone": "a"}, None, {"zone": "b"}, False),
        ({"zone": "a"}, None, {}, False),
        ({"zone": "a", "model": "V100"}, None, {"zone": "a"}, False),
        ({"zone": ""}, None, {"zone": ""}, True),
        ({"zone": ""}, None, {}, False),
        ({}, ZONE_A, {"zone": "a"}, True),
        ({}, ZONE_A, {"zone": "b"}, False),
        ({"model": "V100"}, ZONE_A, {"zone": "a", "model": "V100"}, True),
        ({"model": "V100"}, ZONE_A, {"zone": "a", "model": "P100"}, False),
        ({"model": "V100"}, ZONE_A, {"zone": "b", "model": "V100"}, False),
        ({}, NodeSelector(), {"zone": "a"}, False),
    ],
)
def test_node_matches_requires_both_node_selector_and_required_affinity(
    node_selector: dict[str, str],
    required: NodeSelector | None,
    labels: dict[str, str],
    matched: bool,
) -> None:
    assert node_matches("node-1", labels, node_selector, required) is matched


def test_equal_selectors_hash_equal_so_they_can_key_a_cache() -> None:
    raw = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
        ]
    }
    assert hash(parse_node_selector(raw)) == hash(parse_node_selector(raw))
    assert parse_node_selector(raw) == ZONE_A


def test_preferred_terms_parse_with_their_weights() -> None:
    raw = [
        {
            "weight": 80,
            "preference": {
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
            },
        },
        {
            "weight": 1,
            "preference": {
                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]
            },
        },
    ]
    assert parse_preferred_terms(raw) == (
        PreferredSchedulingTerm(80, ZONE_A.terms[0]),
        PreferredSchedulingTerm(
            1,
            NodeSelectorTerm(
                match_fields=(NodeSelectorRequirement("metadata.name", "NotIn", ("n1",)),)
            ),
        ),
    )


@pytest.mark.parametrize("raw", [None, []])
def test_no_preferred_terms_parse_to_an_empty_tuple(raw: Any) -> None:
    assert parse_preferred_terms(raw) == ()


@pytest.mark.parametrize(
    "item",
    [{"weight": 10, "preference": {}}, {"weight": 10, "preference": None}, {"weight": 10}],
    ids=["empty preference", "null preference", "no preference"],
)
def test_a_preferred_term_without_requirements_matches_no_node(item: dict[str, Any]) -> None:
    (preferred,) = parse_preferred_terms([item])
    assert preferred.term == NodeSelectorTerm()
    assert preferred.term.matches("node-1", LABELS) is False


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (0, "weight: must be an integer from 1 to 100, got 0"),
        (101, "weight: must be an integer from 1 to 100, got 101"),
        (False, "weight: must be an integer from 1 to 100, got false"),
    ],
)
def test_a_preferred_weight_outside_one_to_a_hundred_is_rejected(weight: int, message: str) -> None:
    with pytest.raises(AffinityError) as caught:
        PreferredSchedulingTerm(weight, NodeSelectorTerm())
    assert str(caught.value) == message


@pytest.mark.parametrize("weight", [1, 100])
def test_preferred_weights_at_the_bounds_are_accepted(weight: int) -> None:
    assert PreferredSchedulingTerm(weight, NodeSelectorTerm()).weight == weight


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"weight": 1}, 'expected a list, got {"weight": 1}'),
        (["x"], '[0]: expected an object, got "x"'),
        ([{"preference": {}}], "[0].weight: must be an integer from 1 to 100, got null"),
        (
            [{"weight": 5, "preference": {}}, {"weight": "5", "preference": {}}],
            '[1].weight: must be an integer from 1 to 100, got "5"',
        ),
        ([{"weight": 0, "preference": {}}], "[0].weight: must be an integer from 1 to 100, got 0"),
        (
            [{"weight": 5, "preference": "zone=a"}],
            '[0].preference: expected an object, got "zone=a"',
        ),
        (
            [
                {
                    "weight": 5,
                    "preference": {
                        "matchExpressions": [{"key": "zone", "operator": "Equals", "values": ["a"]}]
                    },
                }
            ],
            '[0].preference.matchExpressions[0].operator: unknown operator "Equals" '
            "(expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt)",
        ),
        (
            [
                {
                    "weight": 5,
                    "preference": {
                        "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["u"]}]
                    },
                }
            ],
            "[0].preference.matchFields[0].key: "
            'unsupported field "metadata.uid" (only metadata.name is)',
        ),
    ],
)
def test_malformed_preferred_terms_raise_affinity_error_with_the_field_path(
    raw: Any, message: str
) -> None:
    with pytest.raises(AffinityError) as caught:
        parse_preferred_terms(raw)
    assert str(caught.value) == message
