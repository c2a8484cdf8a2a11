from typing import Any

import pytest

from koordgang.model.errors import ModelError
from koordgang.model.labels import (
    LabelSelector,
    LabelSelectorError,
    LabelSelectorRequirement,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "frontend", "empty": ""}


@pytest.mark.parametrize(
    ("requirement", "matched"),
    [
        (LabelSelectorRequirement("app", "In", ("web", "api")), True),
        (LabelSelectorRequirement("app", "In", ("api",)), False),
        (LabelSelectorRequirement("app", "In", ("Web",)), False),
        (LabelSelectorRequirement("missing", "In", ("web",)), False),
        (LabelSelectorRequirement("empty", "In", ("",)), True),
        (LabelSelectorRequirement("app", "NotIn", ("api",)), True),
        (LabelSelectorRequirement("app", "NotIn", ("web",)), False),
        # An object without the label is in no set of values.
        (LabelSelectorRequirement("missing", "NotIn", ("web",)), True),
        (LabelSelectorRequirement("app", "Exists"), True),
        (LabelSelectorRequirement("empty", "Exists"), True),
        (LabelSelectorRequirement("missing", "Exists"), False),
        (LabelSelectorRequirement("app", "DoesNotExist"), False),
        (LabelSelectorRequirement("empty", "DoesNotExist"), False),
        (LabelSelectorRequirement("missing", "DoesNotExist"), True),
    ],
)
def test_requirement_matches_labels_by_operator(
    requirement: LabelSelectorRequirement, matched: bool
) -> None:
    assert requirement.matches(LABELS) is matched


@pytest.mark.parametrize(
    ("operator", "values", "message"),
    [
        (
            "Equals",
            ("a",),
            'operator: unknown operator "Equals" (expected one of In, NotIn, Exists, DoesNotExist)',
        ),
        # Gt and Lt exist for node selectors only.
        ("Gt", ("1",), 'operator: unknown operator "Gt"'),
        ("in", ("a",), 'operator: unknown operator "in"'),
        ("In", (), "values: must not be empty for operator In"),
        ("NotIn", (), "values: must not be empty for operator NotIn"),
        ("Exists", ("a",), 'values: must be empty for operator Exists, got ["a"]'),
        ("DoesNotExist", ("a",), 'values: must be empty for operator DoesNotExist, got ["a"]'),
    ],
)
def test_invalid_requirements_are_rejected_like_the_api_server_does(
    operator: str, values: tuple[str, ...], message: str
) -> None:
    with pytest.raises(LabelSelectorError) as caught:
        LabelSelectorRequirement("app", operator, values)
    assert str(caught.value).startswith(message)


WEB = LabelSelector(match_labels=(("app", "web"),))
WEB_NOT_BACKEND = LabelSelector(
    (("app", "web"),), (LabelSelectorRequirement("tier", "NotIn", ("backend",)),)
)


@pytest.mark.parametrize(
    ("selector", "labels", "matched"),
    [
        # An empty selector matches everything, even an object without labels.
        (LabelSelector(), LABELS, True),
        (LabelSelector(), {}, True),
        (WEB, LABELS, True),
        (WEB, {"app": "api"}, False),
        (WEB, {}, False),
        (WEB_NOT_BACKEND, LABELS, True),
        (WEB_NOT_BACKEND, {"app": "web"}, True),
        (WEB_NOT_BACKEND, {"app": "web", "tier": "backend"}, False),
        (WEB_NOT_BACKEND, {"tier": "frontend"}, False),
        (LabelSelector((("app", "web"), ("tier", "frontend"))), LABELS, True),
        (LabelSelector((("app", "web"), ("tier", "backend"))), LABELS, False),
        # A label required with an empty value must be there, empty.
        (LabelSelector((("empty", ""),)), LABELS, True),
        (LabelSelector((("empty", ""),)), {}, False),
    ],
)
def test_a_selector_matches_when_every_label_and_expression_holds(
    selector: LabelSelector, labels: dict[str, str], matched: bool
) -> None:
    assert selector.matches(labels) is matched


def test_with_requirements_narrows_a_copy_and_leaves_the_selector_alone() -> None:
    narrowed = WEB.with_requirements([LabelSelectorRequirement("tier", "In", ("frontend",))])
    assert narrowed == LabelSelector(
        (("app", "web"),), (LabelSelectorRequirement("tier", "In", ("frontend",)),)
    )
    assert narrowed.matches(LABELS) is True
    assert narrowed.matches({"app": "web", "tier": "backend"}) is False
    assert WEB.match_expressions == ()


def test_with_requirements_appends_after_existing_expressions() -> None:
    extra = LabelSelectorRequirement("app", "Exists")
    assert WEB_NOT_BACKEND.with_requirements((extra,)).match_expressions == (
        LabelSelectorRequirement("tier", "NotIn", ("backend",)),
        extra,
    )


def test_selectors_equal_whatever_the_order_of_their_labels_so_they_can_key_a_cache() -> None:
    a = LabelSelector((("app", "web"), ("tier", "frontend")))
    b = LabelSelector((("tier", "frontend"), ("app", "web")))
    assert a == b
    assert hash(a) == hash(b)
    assert {a: "count"}[b] == "count"
    assert a != LabelSelector((("app", "web"),))


def test_selector_parts_given_as_lists_are_stored_as_tuples() -> None:
    # Lists where the fields are typed as tuples, as a caller may pass them all the same.
    selector = LabelSelector(
        [("app", "web")],  # type: ignore[arg-type]
        [LabelSelectorRequirement("tier", "In", ["a"])],  # type: ignore[arg-type]
    )
    assert selector == LabelSelector(
        (("app", "web"),), (LabelSelectorRequirement("tier", "In", ("a",)),)
    )
    assert hash(selector) == hash(
        LabelSelector((("app", "web"),), (LabelSelectorRequirement("tier", "In", ("a",)),))
    )


def test_a_null_selector_parses_to_none_so_the_caller_decides_what_it_means() -> None:
    assert parse_label_selector(None) is None


@pytest.mark.parametrize(
    "raw", [{}, {"matchLabels": None, "matchExpressions": None}, {"matchLabels": {}}]
)
def test_an_empty_selector_parses_to_one_that_matches_everything(raw: dict[str, Any]) -> None:
    selector = parse_label_selector(raw)
    assert selector == LabelSelector()
    assert selector is not None and selector.matches({}) is True


def test_a_selector_parses_labels_and_expressions() -> None:
    raw = {
        "matchLabels": {"tier": "frontend", "app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "team", "operator": "Exists", "values": []},
        ],
    }
    assert parse_label_selector(raw) == LabelSelector(
        (("app", "web"), ("tier", "frontend")),
        (
            LabelSelectorRequirement("env", "In", ("prod", "staging")),
            LabelSelectorRequirement("canary", "DoesNotExist"),
            LabelSelectorRequirement("team", "Exists"),
        ),
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("app=web", 'expected an object, got "app=web"'),
        ({"matchLabels": ["app"]}, 'matchLabels: expected an object, got ["app"]'),
        ({"matchLabels": {"app": 1}}, "matchLabels[app]: expected a string, got 1"),
        ({"matchExpressions": {"key": "a"}}, 'matchExpressions: expected a list, got {"key": "a"}'),
        ({"matchExpressions": ["a"]}, 'matchExpressions[0]: expected an object, got "a"'),
        (
            {
                "matchExpressions": [
                    {"key": "a", "operator": "Exists"},
                    {"key": "b", "operator": "Equals", "values": ["x"]},
                ]
            },
            'matchExpressions[1].operator: unknown operator "Equals" '
            "(expected one of In, NotIn, Exists, DoesNotExist)",
        ),
        (
            {"matchExpressions": [{"key": "a"}]},
            "matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist, "
            "got null",
        ),
        (
            {"matchExpressions": [{"key": "", "operator": "Exists"}]},
            'matchExpressions[0].key: must be a non-empty string, got ""',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "matchExpressions[0].values: must not be empty for operator In",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            'matchExpressions[0].values: expected a list, got "x"',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", 2]}]},
            "matchExpressions[0].values[1]: must be a string, got 2",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'matchExpressions[0].values: must be empty for operator Exists, got ["x"]',
        ),
    ],
)
def test_malformed_selectors_raise_label_selector_error_with_the_field_path(
    raw: Any, message: str
) -> None:
    with pytest.raises(LabelSelectorError) as caught:
        parse_label_selector(raw)
    assert str(caught.value) == message


def test_label_selector_error_is_a_model_error() -> None:
    with pytest.raises(ModelError):
        LabelSelectorRequirement("a", "Like", ())
