from typing import Any

import pytest

from koordgang.model.errors import ModelError
from koordgang.model.labels import LabelSelector, LabelSelectorError, LabelSelectorRequirement
from koordgang.model.pod_affinity import (
    PodAffinity,
    PodAffinityError,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
    parse_pod_affinity,
)

HOSTNAME = "kubernetes.io/hostname"
WEB = LabelSelector((("app", "web"),))
TEAM_ML = LabelSelector((("team", "ml"),))
EVERYTHING = LabelSelector()


def term(
    selector: LabelSelector | None = WEB,
    namespaces: tuple[str, ...] = (),
    namespace_selector: LabelSelector | None = None,
) -> PodAffinityTerm:
    return PodAffinityTerm(selector, frozenset(namespaces), namespace_selector, HOSTNAME)


@pytest.mark.parametrize(
    ("affinity_term", "candidate_namespace", "namespace_labels", "matched"),
    [
        # Neither namespaces nor a selector: the owner's namespace only.
        (term(), "team-a", None, True),
        (term(), "team-b", None, False),
        (term(), "team-b", {"team": "ml"}, False),
        # A namespace list replaces the owner's namespace.
        (term(namespaces=("team-b", "team-c")), "team-b", None, True),
        (term(namespaces=("team-b",)), "team-a", None, False),
        # An empty namespace selector matches every namespace, labels known or not.
        (term(namespace_selector=EVERYTHING), "team-z", None, True),
        (term(namespace_selector=EVERYTHING), "team-a", {}, True),
        # A non-empty one needs the namespace's labels; unknown labels are no labels.
        (term(namespace_selector=TEAM_ML), "team-b", {"team": "ml"}, True),
        (term(namespace_selector=TEAM_ML), "team-b", {"team": "web"}, False),
        (term(namespace_selector=TEAM_ML), "team-b", None, False),
        # ...and it replaces the owner's namespace too.
        (term(namespace_selector=TEAM_ML), "team-a", {}, False),
        # The list and the selector are alternatives.
        (term(namespaces=("team-c",), namespace_selector=TEAM_ML), "team-c", {}, True),
        (term(namespaces=("team-c",), namespace_selector=TEAM_ML), "team-b", {"team": "ml"}, True),
        (term(namespaces=("team-c",), namespace_selector=TEAM_ML), "team-b", {}, False),
    ],
)
def test_namespace_matches_follows_the_kubernetes_namespace_rules(
    affinity_term: PodAffinityTerm,
    candidate_namespace: str,
    namespace_labels: dict[str, str] | None,
    matched: bool,
) -> None:
    assert (
        affinity_term.namespace_matches("team-a", candidate_namespace, namespace_labels) is matched
    )


@pytest.mark.parametrize(
    ("affinity_term", "candidate_namespace", "candidate_labels", "matched"),
    [
        (term(), "team-a", {"app": "web"}, True),
        (term(), "team-a", {"app": "api"}, False),
        (term(), "team-b", {"app": "web"}, False),
        # A null label selector matches no pod at all.
        (term(selector=None), "team-a", {"app": "web"}, False),
        (term(selector=None), "team-a", {}, False),
        (term(selector=None, namespace_selector=EVERYTHING), "team-a", {}, False),
        # An empty one matches every pod in the term's namespaces.
        (term(selector=EVERYTHING), "team-a", {}, True),
        (term(selector=EVERYTHING), "team-b", {}, False),
        (term(selector=EVERYTHING, namespace_selector=EVERYTHING), "team-b", {}, True),
    ],
)
def test_a_term_matches_pods_by_namespace_and_labels(
    affinity_term: PodAffinityTerm,
    candidate_namespace: str,
    candidate_labels: dict[str, str],
    matched: bool,
) -> None:
    assert (
        affinity_term.matches_pod("team-a", candidate_namespace, candidate_labels, None) is matched
    )


def test_matches_pod_passes_the_namespace_labels_on() -> None:
    ml_only = term(namespace_selector=TEAM_ML)
    assert ml_only.matches_pod("team-a", "team-b", {"app": "web"}, {"team": "ml"}) is True
    assert ml_only.matches_pod("team-a", "team-b", {"app": "web"}, {"team": "x"}) is False


def test_namespaces_given_as_a_tuple_are_stored_as_a_frozenset() -> None:
    made = PodAffinityTerm(WEB, ("b", "a"), None, HOSTNAME)  # type: ignore[arg-type]
    assert made.namespaces == frozenset({"a", "b"})
    assert hash(made) == hash(term(namespaces=("a", "b")))


def test_a_term_needs_a_topology_key() -> None:
    with pytest.raises(PodAffinityError) as caught:
        PodAffinityTerm(WEB, frozenset(), None, "")
    assert str(caught.value) == 'topologyKey: must be a non-empty string, got ""'


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (0, "weight: must be an integer from 1 to 100, got 0"),
        (101, "weight: must be an integer from 1 to 100, got 101"),
        (-5, "weight: must be an integer from 1 to 100, got -5"),
        (True, "weight: must be an integer from 1 to 100, got true"),
    ],
)
def test_a_weight_outside_one_to_a_hundred_is_rejected(weight: int, message: str) -> None:
    with pytest.raises(PodAffinityError) as caught:
        WeightedPodAffinityTerm(weight, term())
    assert str(caught.value) == message


@pytest.mark.parametrize("weight", [1, 100])
def test_weights_at_the_bounds_are_accepted(weight: int) -> None:
    assert WeightedPodAffinityTerm(weight, term()).weight == weight


PREFERRED = (WeightedPodAffinityTerm(10, term()),)


@pytest.mark.parametrize(
    ("affinity", "preferred"),
    [
        (PodAffinity(), False),
        (PodAffinity(required_affinity=(term(),)), False),
        (PodAffinity(required_anti_affinity=(term(),)), False),
        (PodAffinity(preferred_affinity=PREFERRED), True),
        (PodAffinity(preferred_anti_affinity=PREFERRED), True),
    ],
)
def test_pod_affinity_says_whether_it_holds_preferred_terms(
    affinity: PodAffinity, preferred: bool
) -> None:
    assert affinity.has_preferred is preferred


def spec(affinity: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c"}], "affinity": affinity}


@pytest.mark.parametrize(
    "raw",
    [
        {"containers": [{"name": "c"}]},
        spec(None),
        spec({}),
        spec({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}),
        spec({"podAffinity": {}, "podAntiAffinity": None}),
        spec(
            {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": None},
            }
        ),
    ],
)
def test_a_pod_without_terms_has_no_pod_affinity(raw: dict[str, Any]) -> None:
    assert parse_pod_affinity(raw, {"app": "web"}) is None


def test_every_kind_of_term_parses() -> None:
    raw = spec(
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 20,
                        "podAffinityTerm": {
                            "labelSelector": {
                                "matchExpressions": [{"key": "app", "operator": "Exists"}]
                            },
                            "namespaces": ["shared", "infra"],
                            "topologyKey": "rack",
                        },
                    }
                ],
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "namespaceSelector": {},
                        "topologyKey": HOSTNAME,
                    }
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "namespaceSelector": {"matchLabels": {"team": "ml"}},
                            "topologyKey": "zone",
                        },
                    }
                ],
            },
        }
    )
    assert parse_pod_affinity(raw, {"app": "web"}) == PodAffinity(
        required_affinity=(
            PodAffinityTerm(LabelSelector((("app", "db"),)), frozenset(), None, "zone"),
        ),
        preferred_affinity=(
            WeightedPodAffinityTerm(
                20,
                PodAffinityTerm(
                    LabelSelector(match_expressions=(LabelSelectorRequirement("app", "Exists"),)),
                    frozenset({"shared", "infra"}),
                    None,
                    "rack",
                ),
            ),
        ),
        required_anti_affinity=(PodAffinityTerm(WEB, frozenset(), EVERYTHING, HOSTNAME),),
        preferred_anti_affinity=(
            WeightedPodAffinityTerm(100, PodAffinityTerm(WEB, frozenset(), TEAM_ML, "zone")),
        ),
    )


def anti_affinity_term(**fields: Any) -> dict[str, Any]:
    return spec(
        {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": HOSTNAME, **fields}
                ]
            }
        }
    )


def parsed_selector(raw: dict[str, Any], labels: dict[str, str]) -> LabelSelector | None:
    affinity = parse_pod_affinity(raw, labels)
    assert affinity is not None
    return affinity.required_anti_affinity[0].selector


POD_LABELS = {"app": "web", "pod-template-hash": "5d8f", "tenant": "acme"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"labelSelector": {"matchLabels": {"app": "web"}}}, WEB),
        (
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["pod-template-hash"],
            },
            WEB.with_requirements([LabelSelectorRequirement("pod-template-hash", "In", ("5d8f",))]),
        ),
        (
            {"labelSelector": {}, "mismatchLabelKeys": ["tenant"]},
            LabelSelector(
                match_expressions=(LabelSelectorRequirement("tenant", "NotIn", ("acme",)),)
            ),
        ),
        # matchLabelKeys come first, then mismatchLabelKeys, each in the order given.
        (
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["tenant", "pod-template-hash"],
                "mismatchLabelKeys": ["app"],
            },
            WEB.with_requirements(
                [
                    LabelSelectorRequirement("tenant", "In", ("acme",)),
                    LabelSelectorRequirement("pod-template-hash", "In", ("5d8f",)),
                    LabelSelectorRequirement("app", "NotIn", ("web",)),
                ]
            ),
        ),
        # Keys the pod does not carry are ignored.
        (
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["missing"],
                "mismatchLabelKeys": ["also-missing"],
            },
            WEB,
        ),
        # A null selector stays null (matches nothing) whatever keys are given.
        ({"matchLabelKeys": ["pod-template-hash"]}, None),
        ({"labelSelector": None, "mismatchLabelKeys": ["tenant"]}, None),
    ],
)
def test_label_keys_are_merged_into_the_selector_with_the_pods_own_values(
    fields: dict[str, Any], expected: LabelSelector | None
) -> None:
    assert parsed_selector(anti_affinity_term(**fields), POD_LABELS) == expected


def test_merged_label_keys_select_only_pods_of_the_same_revision() -> None:
    raw = anti_affinity_term(
        labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["pod-template-hash"]
    )
    selector = parsed_selector(raw, POD_LABELS)
    assert selector is not None
    assert selector.matches({"app": "web", "pod-template-hash": "5d8f"}) is True
    assert selector.matches({"app": "web", "pod-template-hash": "old1"}) is False
    assert selector.matches({"app": "web"}) is False


def test_merged_mismatch_keys_select_only_pods_of_other_tenants() -> None:
    raw = anti_affinity_term(labelSelector={}, mismatchLabelKeys=["tenant"])
    selector = parsed_selector(raw, POD_LABELS)
    assert selector is not None
    assert selector.matches({"tenant": "acme"}) is False
    assert selector.matches({"tenant": "globex"}) is True
    assert selector.matches({}) is True


REQUIRED_ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_AFFINITY = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def preferred_affinity(*items: Any) -> dict[str, Any]:
    return spec({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(items)}})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (spec("anti"), 'spec.affinity: expected an object, got "anti"'),
        (spec({"podAffinity": []}), "spec.affinity.podAffinity: expected an object, got []"),
        (
            spec({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}),
            f"{REQUIRED_ANTI}: expected a list, got {{}}",
        ),
        (
            spec({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["x"]}}),
            f'{REQUIRED_ANTI}[0]: expected an object, got "x"',
        ),
        (
            anti_affinity_term(topologyKey=""),
            f'{REQUIRED_ANTI}[0].topologyKey: must be a non-empty string, got ""',
        ),
        (
            anti_affinity_term(topologyKey=None),
            f"{REQUIRED_ANTI}[0].topologyKey: must be a non-empty string, got null",
        ),
        (
            anti_affinity_term(topologyKey=7),
            f"{REQUIRED_ANTI}[0].topologyKey: must be a non-empty string, got 7",
        ),
        (
            anti_affinity_term(
                labelSelector={
                    "matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]
                }
            ),
            f"{REQUIRED_ANTI}[0].labelSelector.matchExpressions[0].operator: "
            'unknown operator "Gt" (expected one of In, NotIn, Exists, DoesNotExist)',
        ),
        (
            anti_affinity_term(namespaceSelector={"matchLabels": {"team": 5}}),
            f"{REQUIRED_ANTI}[0].namespaceSelector.matchLabels[team]: expected a string, got 5",
        ),
        (
            anti_affinity_term(namespaces="team-a"),
            f'{REQUIRED_ANTI}[0].namespaces: expected a list, got "team-a"',
        ),
        (
            anti_affinity_term(namespaces=["team-a", None]),
            f"{REQUIRED_ANTI}[0].namespaces[1]: must be a string, got null",
        ),
        (
            anti_affinity_term(labelSelector={}, matchLabelKeys=[1]),
            f"{REQUIRED_ANTI}[0].matchLabelKeys[0]: must be a string, got 1",
        ),
        (
            anti_affinity_term(labelSelector={}, mismatchLabelKeys="tenant"),
            f'{REQUIRED_ANTI}[0].mismatchLabelKeys: expected a list, got "tenant"',
        ),
        (
            preferred_affinity({"weight": 0, "podAffinityTerm": {"topologyKey": "zone"}}),
            f"{PREFERRED_AFFINITY}[0].weight: must be an integer from 1 to 100, got 0",
        ),
        (
            preferred_affinity({"podAffinityTerm": {"topologyKey": "zone"}}),
            f"{PREFERRED_AFFINITY}[0].weight: must be an integer from 1 to 100, got null",
        ),
        (
            preferred_affinity({"weight": "10", "podAffinityTerm": {"topologyKey": "zone"}}),
            f'{PREFERRED_AFFINITY}[0].weight: must be an integer from 1 to 100, got "10"',
        ),
        (
            preferred_affinity(
                {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}},
                {"weight": 1, "podAffinityTerm": {}},
            ),
            f"{PREFERRED_AFFINITY}[1].podAffinityTerm.topologyKey: "
            "must be a non-empty string, got null",
        ),
        (
            preferred_affinity({"weight": 1}),
            f"{PREFERRED_AFFINITY}[0].podAffinityTerm.topologyKey: "
            "must be a non-empty string, got null",
        ),
    ],
)
def test_malformed_terms_raise_an_error_naming_the_field(raw: Any, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_pod_affinity(raw, {})
    assert str(caught.value) == message
    assert caught.value.path == message.split(": ", 1)[0]


def test_a_bad_selector_raises_label_selector_error_and_a_bad_term_pod_affinity_error() -> None:
    with pytest.raises(LabelSelectorError):
        parse_pod_affinity(anti_affinity_term(labelSelector={"matchLabels": []}), {})
    with pytest.raises(PodAffinityError):
        parse_pod_affinity(anti_affinity_term(topologyKey=""), {})
