from collections.abc import Mapping
from typing import Any

import pytest

from koordgang.model.gang import (
    MAX_MIN_AVAILABLE,
    ConfigIssue,
    GangMode,
    GangSource,
    MatchPolicy,
    PodGroupInfo,
)
from koordgang.model.gang_spec import GangSpec, resolve_gang_spec
from koordgang.model.gather import GatherRule
from koordgang.model.koordinator import (
    GROUPS_KEY,
    LIGHTWEIGHT_MIN_LABEL,
    LIGHTWEIGHT_NAME_LABEL,
    MATCH_POLICY_KEY,
    MIN_AVAILABLE_KEY,
    MODE_KEY,
    NAME_KEY,
    NETWORK_TOPOLOGY_SPEC_KEY,
    POD_GROUP_LABEL,
    TOTAL_NUMBER_KEY,
    WAITING_TIME_KEY,
    gang_ref_of,
    parse_podgroup,
)
from koordgang.model.resources import Resources

DEFAULT_WAIT = 600.0
SEED_GROUPS = '["namespaceA/gang-a", "namespaceB/gang-b"]'
SEED_TOPOLOGY = """{
  "gatherStrategy": [
    {"layer": "SpineLayer", "strategy": "PreferGather"},
    {"layer": "BlockLayer", "strategy": "PreferGather"},
    {"layer": "AcceleratorLayer", "strategy": "PreferGather"}
  ]
}
"""


def podgroup_json(
    spec: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    name: str = "gang-a",
    namespace: str = "default",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": "pg-uid-1",
        "resourceVersion": "42",
        "creationTimestamp": "2022-07-11T18:26:33Z",
    }
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": {"minMember": 5} if spec is None else dict(spec),
    }


def annotation_gang(namespace: str = "default", **extra: str) -> GangSpec:
    """A gang declared the annotation way: name gang-a, min-available 5, plus ``extra``
    annotations keyed by the part after the prefix, underscores for dashes."""
    annotations = {NAME_KEY: "gang-a", MIN_AVAILABLE_KEY: "5"}
    for short, value in extra.items():
        annotations["gang.scheduling.koordinator.sh/" + short.replace("_", "-")] = value
    return resolve(namespace, {}, annotations)


def resolve(
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    podgroup: PodGroupInfo | None = None,
    default_waiting_time: float = DEFAULT_WAIT,
) -> GangSpec:
    ref = gang_ref_of(namespace, labels, annotations)
    assert ref is not None
    return resolve_gang_spec(ref, labels, annotations, podgroup, default_waiting_time)


def messages(spec: GangSpec) -> list[str]:
    return [issue.message() for issue in spec.issues]


# --- the three declaration ways ---------------------------------------------------------------


def test_the_seed_annotation_gang_with_defaults_resolves_to_strict_alone_with_default_wait() -> (
    None
):
    spec = annotation_gang()
    assert spec == GangSpec(
        namespace="default",
        name="gang-a",
        source=GangSource.ANNOTATIONS,
        min_available=5,
        total_number=5,
        mode=GangMode.STRICT,
        waiting_time=600.0,
        groups=("default/gang-a",),
        match_policy=MatchPolicy.ONCE_SATISFIED,
        network_topology_spec=None,
        issues=(),
    )
    assert spec.startable
    assert spec.key == "default/gang-a"


def test_the_seed_annotation_gang_group_example_is_read_in_full() -> None:
    spec = annotation_gang(
        namespace="namespaceA",
        waiting_time="3600s ",  # the seed's YAML has a trailing space
        total_number="5",
        mode="Strict",
        groups=SEED_GROUPS,
    )
    assert spec.issues == ()
    assert spec.min_available == 5
    assert spec.total_number == 5
    assert spec.mode is GangMode.STRICT
    assert spec.waiting_time == 3600.0
    assert spec.groups == ("namespaceA/gang-a", "namespaceB/gang-b")


def test_the_seed_example_with_empty_groups_means_the_gang_is_alone_without_an_issue() -> None:
    spec = annotation_gang(namespace="namespaceA", groups="")
    assert spec.groups == ("namespaceA/gang-a",)
    assert spec.issues == ()


def test_the_lightweight_labels_declare_name_and_minimum() -> None:
    labels = {LIGHTWEIGHT_NAME_LABEL: "job-1", LIGHTWEIGHT_MIN_LABEL: "3"}
    spec = resolve("ml", labels, {})
    assert (spec.source, spec.key, spec.min_available, spec.total_number) == (
        GangSource.LABELS,
        "ml/job-1",
        3,
        3,
    )
    assert spec.issues == ()


def test_the_lightweight_name_label_accepts_the_min_available_annotation_as_fallback() -> None:
    spec = resolve("ml", {LIGHTWEIGHT_NAME_LABEL: "job-1"}, {MIN_AVAILABLE_KEY: "4"})
    assert spec.min_available == 4
    assert spec.issues == ()


def test_the_lightweight_min_label_wins_over_the_min_available_annotation() -> None:
    labels = {LIGHTWEIGHT_NAME_LABEL: "job-1", LIGHTWEIGHT_MIN_LABEL: "3"}
    spec = resolve("ml", labels, {MIN_AVAILABLE_KEY: "4"})
    assert spec.min_available == 3


def test_the_seed_podgroup_gives_min_member_and_schedule_timeout() -> None:
    podgroup = parse_podgroup(
        podgroup_json(
            {
                "minMember": 5,
                "minResources": {"cpu": "5", "memory": "2048Mi"},
                "scheduleTimeoutSeconds": 600,
            }
        )
    )
    assert podgroup == PodGroupInfo(
        namespace="default",
        name="gang-a",
        uid="pg-uid-1",
        resource_version="42",
        creation_timestamp=1657563993.0,
        min_member=5,
        schedule_timeout=600.0,
        min_resources=Resources({"cpu": 5000, "memory": 2048 * 2**20}),
        annotations={},
        issues=(),
    )
    assert podgroup.min_resources is not None
    assert podgroup.min_resources.get("cpu") == 5000
    assert podgroup.min_resources.get("memory") == 2 * 2**30
    assert podgroup.key == "default/gang-a"
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup, default_waiting_time=30)
    assert (spec.source, spec.min_available, spec.total_number, spec.waiting_time) == (
        GangSource.POD_GROUP,
        5,
        5,
        600.0,
    )
    assert spec.issues == ()


def test_the_seed_podgroup_gang_group_reads_its_optional_keys_from_annotations() -> None:
    podgroup = parse_podgroup(
        podgroup_json(
            {"minMember": 5, "scheduleTimeoutSeconds": 600},
            annotations={
                TOTAL_NUMBER_KEY: "5",
                MODE_KEY: "Strict",
                GROUPS_KEY: SEED_GROUPS,
            },
            namespace="namespaceA",
        )
    )
    spec = resolve("namespaceA", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup)
    assert spec.issues == ()
    assert spec.groups == ("namespaceA/gang-a", "namespaceB/gang-b")
    assert spec.mode is GangMode.STRICT
    assert spec.total_number == 5
    assert spec.waiting_time == 600.0


def test_the_seed_escaped_groups_and_topology_spec_on_a_podgroup_are_accepted() -> None:
    podgroup = parse_podgroup(
        podgroup_json(
            {"minMember": 2},
            annotations={
                GROUPS_KEY: '["default/gang-master", "default/gang-worker"]',
                NETWORK_TOPOLOGY_SPEC_KEY: SEED_TOPOLOGY,
            },
            name="gang-worker",
        )
    )
    spec = resolve("default", {POD_GROUP_LABEL: "gang-worker"}, {}, podgroup)
    assert spec.issues == ()
    assert spec.groups == ("default/gang-master", "default/gang-worker")
    assert spec.network_topology_spec is not None
    assert spec.network_topology_spec.text == SEED_TOPOLOGY
    assert spec.network_topology_spec.rules == (
        GatherRule("SpineLayer", "PreferGather"),
        GatherRule("BlockLayer", "PreferGather"),
        GatherRule("AcceleratorLayer", "PreferGather"),
    )


def test_a_podgroup_gang_whose_podgroup_does_not_exist_yet_cannot_start() -> None:
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {MIN_AVAILABLE_KEY: "5"}, None)
    assert spec.min_available is None
    assert not spec.startable
    assert messages(spec) == [
        'pod-group.scheduling.sigs.k8s.io="gang-a" names a PodGroup that does not exist in '
        "namespace default; the gang cannot start until it is created"
    ]
    assert spec.issues[0].fatal
    assert spec.issues[0].key == POD_GROUP_LABEL


# --- override order ---------------------------------------------------------------------------


def test_pod_annotations_override_the_podgroup_annotations_key_by_key() -> None:
    podgroup = parse_podgroup(
        podgroup_json(
            {"minMember": 4, "scheduleTimeoutSeconds": 600},
            annotations={
                TOTAL_NUMBER_KEY: "6",
                MODE_KEY: "Strict",
                MATCH_POLICY_KEY: "only-waiting",
                GROUPS_KEY: '["default/gang-b"]',
                WAITING_TIME_KEY: "20m",
            },
        )
    )
    pod_annotations = {
        MIN_AVAILABLE_KEY: "2",
        MODE_KEY: "NonStrict",
        GROUPS_KEY: "",
        WAITING_TIME_KEY: "1h",
    }
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, pod_annotations, podgroup)
    assert spec.issues == ()
    assert spec.min_available == 2  # the pod's min-available beats spec.minMember
    assert spec.total_number == 6  # only on the PodGroup
    assert spec.mode is GangMode.NON_STRICT
    assert spec.match_policy is MatchPolicy.ONLY_WAITING  # only on the PodGroup
    assert spec.groups == ("default/gang-a",)  # the pod's "" beats the PodGroup's group
    assert spec.waiting_time == 3600.0


@pytest.mark.parametrize(
    ("pod_wait", "podgroup_wait", "schedule_timeout", "expected"),
    [
        ("90s", "20m", 600, 90.0),
        (None, "20m", 600, 1200.0),
        (None, None, 600, 600.0),
        (None, None, None, 45.0),
        ("2h", None, None, 7200.0),
    ],
)
def test_waiting_time_comes_from_annotation_then_schedule_timeout_then_the_default(
    pod_wait: str | None,
    podgroup_wait: str | None,
    schedule_timeout: int | None,
    expected: float,
) -> None:
    spec_json: dict[str, Any] = {"minMember": 1}
    if schedule_timeout is not None:
        spec_json["scheduleTimeoutSeconds"] = schedule_timeout
    podgroup = parse_podgroup(
        podgroup_json(
            spec_json, annotations={WAITING_TIME_KEY: podgroup_wait} if podgroup_wait else {}
        )
    )
    pod_annotations = {WAITING_TIME_KEY: pod_wait} if pod_wait else {}
    spec = resolve(
        "default", {POD_GROUP_LABEL: "gang-a"}, pod_annotations, podgroup, default_waiting_time=45
    )
    assert spec.waiting_time == expected
    assert spec.issues == ()


def test_a_bad_waiting_time_falls_back_to_schedule_timeout_seconds() -> None:
    podgroup = parse_podgroup(podgroup_json({"minMember": 1, "scheduleTimeoutSeconds": 300}))
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {WAITING_TIME_KEY: "soon"}, podgroup)
    assert spec.waiting_time == 300.0
    assert messages(spec) == [
        'gang.scheduling.koordinator.sh/waiting-time="soon" is not a duration such as 600s or '
        "1h30m; using 300s from spec.scheduleTimeoutSeconds"
    ]


def test_a_bad_podgroup_min_member_is_not_reported_when_the_pod_overrides_it() -> None:
    podgroup = parse_podgroup(podgroup_json({"minMember": "many"}))
    assert podgroup.min_member is None
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {MIN_AVAILABLE_KEY: "3"}, podgroup)
    assert spec.min_available == 3
    assert spec.issues == ()


# --- min-available / minMember ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", 1), ("5", 5), (" 3 ", 3), ("+7", 7), ("007", 7), (str(MAX_MIN_AVAILABLE), 100_000)],
)
def test_min_available_accepts_positive_integers(value: str, expected: int) -> None:
    spec = resolve("default", {}, {NAME_KEY: "gang-a", MIN_AVAILABLE_KEY: value})
    assert spec.min_available == expected
    assert spec.total_number == expected
    assert spec.issues == ()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("abc", "is not an integer"),
        ("1.5", "is not an integer"),
        ("", "is not an integer"),
        ("5 pods", "is not an integer"),
        ("\u0665", "is not an integer"),  # an Arabic-Indic five is not an ASCII digit
        ("1_000", "is not an integer"),
        ("0", "is less than 1"),
        ("-3", "is less than 1"),
        ("100001", "is too large (more than 100000)"),
        ("9" * 40, "is too large (more than 100000)"),
    ],
)
def test_a_bad_min_available_annotation_means_the_gang_cannot_start(
    value: str, problem: str
) -> None:
    spec = resolve("default", {}, {NAME_KEY: "gang-a", MIN_AVAILABLE_KEY: value})
    assert spec.min_available is None
    assert not spec.startable
    assert spec.issues == (
        ConfigIssue(MIN_AVAILABLE_KEY, value, problem, "the gang cannot start", fatal=True),
    )


def test_the_exact_message_for_a_non_numeric_min_available() -> None:
    spec = resolve("default", {}, {NAME_KEY: "gang-a", MIN_AVAILABLE_KEY: "abc"})
    assert messages(spec) == [
        'gang.scheduling.koordinator.sh/min-available="abc" is not an integer; '
        "the gang cannot start"
    ]


@pytest.mark.parametrize(
    ("labels", "annotations", "message"),
    [
        (
            {},
            {NAME_KEY: "gang-a"},
            'gang.scheduling.koordinator.sh/min-available="" is missing; the gang cannot start',
        ),
        (
            {LIGHTWEIGHT_NAME_LABEL: "gang-a"},
            {},
            'pod-group.scheduling.sigs.k8s.io/min-available="" is missing; the gang cannot start',
        ),
        (
            {LIGHTWEIGHT_NAME_LABEL: "gang-a", LIGHTWEIGHT_MIN_LABEL: "-1"},
            {},
            'pod-group.scheduling.sigs.k8s.io/min-available="-1" is less than 1; '
            "the gang cannot start",
        ),
    ],
)
def test_a_missing_or_bad_minimum_names_the_key_the_declaration_uses(
    labels: dict[str, str], annotations: dict[str, str], message: str
) -> None:
    spec = resolve("default", labels, annotations)
    assert messages(spec) == [message]
    assert spec.issues[0].fatal
    assert spec.min_available is None


@pytest.mark.parametrize(
    ("min_member", "shown", "problem"),
    [
        ("five", "five", "is not an integer"),
        ("5", "5", "is not an integer"),
        (2.5, "2.5", "is not an integer"),
        (True, "true", "is not an integer"),
        (-1, "-1", "is less than 1"),
        (0, "0", "is less than 1"),
        (10**9, "1000000000", "is too large (more than 100000)"),
    ],
)
def test_a_bad_podgroup_min_member_is_a_fatal_issue_on_podgroup_and_gang(
    min_member: Any, shown: str, problem: str
) -> None:
    podgroup = parse_podgroup(podgroup_json({"minMember": min_member}))
    expected = ConfigIssue("spec.minMember", shown, problem, "the gang cannot start", fatal=True)
    assert podgroup.min_member is None
    assert podgroup.issues == (expected,)
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup)
    assert spec.min_available is None
    assert spec.issues == (expected,)


def test_a_podgroup_without_min_member_cannot_start() -> None:
    podgroup = parse_podgroup(podgroup_json({"scheduleTimeoutSeconds": 60}))
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup)
    assert messages(spec) == ['spec.minMember="" is missing; the gang cannot start']
    assert not spec.startable


# --- scheduleTimeoutSeconds and other PodGroup fields -----------------------------------------


def test_a_zero_schedule_timeout_means_the_default_waiting_time() -> None:
    # scheduler-plugins' clients write 0 for "no timeout of my own".
    podgroup = parse_podgroup(podgroup_json({"minMember": 2, "scheduleTimeoutSeconds": 0}))
    assert podgroup.schedule_timeout is None
    assert podgroup.issues == ()
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup, default_waiting_time=90)
    assert spec.waiting_time == 90.0


@pytest.mark.parametrize(
    ("timeout", "shown", "problem"),
    [
        (-30, "-30", "is not positive"),
        ("600", "600", "is not an integer"),
        (1.5, "1.5", "is not an integer"),
        (400 * 86400, "34560000", "is longer than 365 days"),
    ],
)
def test_a_bad_schedule_timeout_is_ignored_in_favour_of_the_default(
    timeout: Any, shown: str, problem: str
) -> None:
    podgroup = parse_podgroup(podgroup_json({"minMember": 2, "scheduleTimeoutSeconds": timeout}))
    expected = ConfigIssue("spec.scheduleTimeoutSeconds", shown, problem, "ignoring it")
    assert podgroup.schedule_timeout is None
    assert podgroup.issues == (expected,)
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup, default_waiting_time=90)
    assert spec.waiting_time == 90.0
    assert spec.min_available == 2
    assert spec.issues == (expected,)


BAD_QUANTITY = (
    'invalid quantity "lots": expected a number with an optional suffix, e.g. 100m, 1.5, 2Gi, '
    "500M or 129e6"
)


@pytest.mark.parametrize(
    ("resources", "key", "problem"),
    [
        ({"cpu": "lots", "memory": "1Gi"}, "spec.minResources[cpu]", BAD_QUANTITY),
        (
            {"nvidia.com/gpu": "-1"},
            "spec.minResources[nvidia.com/gpu]",
            'invalid quantity "-1": must not be negative',
        ),
        (
            "8 GPUs",
            "spec.minResources",
            'expected a map of resource name to quantity, got "8 GPUs"',
        ),
    ],
)
def test_bad_min_resources_are_ignored_with_an_issue_that_names_the_entry(
    resources: Any, key: str, problem: str
) -> None:
    podgroup = parse_podgroup(podgroup_json({"minMember": 2, "minResources": resources}))

    [issue] = podgroup.issues
    assert (issue.key, issue.problem, issue.action, issue.fatal) == (
        key,
        problem,
        "ignoring it",
        False,
    )
    assert podgroup.min_resources is None
    assert podgroup.min_member == 2
    spec = resolve("default", {POD_GROUP_LABEL: "gang-a"}, {}, podgroup)
    assert spec.startable
    assert spec.issues == (issue,)


def test_the_issue_for_a_bad_min_resources_entry_shows_the_value_of_that_entry() -> None:
    spec = {"minMember": 2, "minResources": {"cpu": "lots", "memory": "1Gi"}}
    [issue] = parse_podgroup(podgroup_json(spec)).issues

    assert issue.message() == f'spec.minResources[cpu]="lots" {BAD_QUANTITY}; ignoring it'


@pytest.mark.parametrize("resources", [{}, {"cpu": "0"}, None])
def test_empty_or_zero_min_resources_mean_no_minimum(resources: Any) -> None:
    podgroup = parse_podgroup(podgroup_json({"minMember": 2, "minResources": resources}))

    assert podgroup.min_resources is None
    assert podgroup.issues == ()


def test_parse_podgroup_never_raises_on_malformed_metadata() -> None:
    podgroup = parse_podgroup(
        {
            "metadata": {
                "name": 7,
                "creationTimestamp": "yesterday",
                "annotations": {MODE_KEY: "NonStrict", "bad": 3},
            },
            "spec": "nope",
        }
    )
    assert podgroup == PodGroupInfo(
        namespace="default",
        name="",
        uid="",
        resource_version="",
        creation_timestamp=0.0,
        min_member=None,
        schedule_timeout=None,
        annotations={MODE_KEY: "NonStrict"},
        issues=(ConfigIssue("spec.minMember", "", "is missing", "the gang cannot start", True),),
    )


def test_parse_podgroup_accepts_an_empty_object() -> None:
    podgroup = parse_podgroup({})
    assert podgroup.min_member is None
    assert [issue.key for issue in podgroup.issues] == ["spec.minMember"]


# --- total-number -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected_total", "message"),
    [
        ("8", 8, None),
        ("5", 5, None),
        (
            "3",
            5,
            'gang.scheduling.koordinator.sh/total-number="3" is smaller than min-available 5; '
            "using 5",
        ),
        (
            "lots",
            5,
            'gang.scheduling.koordinator.sh/total-number="lots" is not an integer; '
            "using min-available 5",
        ),
        (
            "0",
            5,
            'gang.scheduling.koordinator.sh/total-number="0" is less than 1; using min-available 5',
        ),
        (
            "-2",
            5,
            'gang.scheduling.koordinator.sh/total-number="-2" is less than 1; '
            "using min-available 5",
        ),
        (
            "1000000",
            5,
            'gang.scheduling.koordinator.sh/total-number="1000000" is too large '
            "(more than 100000); using min-available 5",
        ),
    ],
)
def test_total_number_defaults_to_and_is_raised_to_min_available(
    value: str, expected_total: int, message: str | None
) -> None:
    spec = annotation_gang(total_number=value)
    assert spec.total_number == expected_total
    assert messages(spec) == ([message] if message else [])
    assert spec.startable


def test_a_bad_total_number_of_a_gang_that_cannot_start_is_ignored() -> None:
    annotations = {NAME_KEY: "gang-a", MIN_AVAILABLE_KEY: "x", TOTAL_NUMBER_KEY: "y"}
    spec = resolve("default", {}, annotations)
    assert spec.total_number == 0
    assert messages(spec) == [
        'gang.scheduling.koordinator.sh/min-available="x" is not an integer; the gang cannot start',
        'gang.scheduling.koordinator.sh/total-number="y" is not an integer; ignoring it',
    ]


# --- mode -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Strict", GangMode.STRICT),
        ("NonStrict", GangMode.NON_STRICT),
        ("strict", GangMode.STRICT),
        ("nonstrict", GangMode.NON_STRICT),
        ("NONSTRICT", GangMode.NON_STRICT),
        (" NonStrict ", GangMode.NON_STRICT),
    ],
)
def test_mode_is_read_case_insensitively_without_an_issue(value: str, expected: GangMode) -> None:
    spec = annotation_gang(mode=value)
    assert spec.mode is expected
    assert spec.issues == ()


@pytest.mark.parametrize("value", ["Sloppy", "", "Non-Strict", "true"])
def test_an_unknown_mode_falls_back_to_strict_with_an_issue(value: str) -> None:
    spec = annotation_gang(mode=value)
    assert spec.mode is GangMode.STRICT
    assert messages(spec) == [
        f'gang.scheduling.koordinator.sh/mode="{value}" is not Strict or NonStrict; using Strict'
    ]
    assert not spec.issues[0].fatal


# --- waiting-time -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3600s", 3600.0),
        ("30s", 30.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("72h", 259200.0),  # days-long waits are fine: there is no 15-minute cap
        ("8760h", 31536000.0),  # exactly 365 days
        ("500ms", 0.5),
    ],
)
def test_waiting_time_accepts_go_durations_of_any_sensible_length(
    value: str, seconds: float
) -> None:
    spec = annotation_gang(waiting_time=value)
    assert spec.waiting_time == seconds
    assert spec.issues == ()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("3600", "is not a duration such as 600s or 1h30m"),
        ("10 minutes", "is not a duration such as 600s or 1h30m"),
        ("1d", "is not a duration such as 600s or 1h30m"),
        ("", "is not a duration such as 600s or 1h30m"),
        ("0s", "is not positive"),
        ("0", "is not positive"),
        ("-5m", "is not positive"),
        ("8761h", "is longer than 365 days"),
        ("2562047h", "is longer than 365 days"),
        ("9999999999h", "is not a duration such as 600s or 1h30m"),  # beyond Go's range
    ],
)
def test_a_bad_waiting_time_falls_back_to_the_default_with_an_issue(
    value: str, problem: str
) -> None:
    spec = annotation_gang(waiting_time=value)
    assert spec.waiting_time == DEFAULT_WAIT
    assert spec.issues == (ConfigIssue(WAITING_TIME_KEY, value, problem, "using the default 600s"),)


# --- groups -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (SEED_GROUPS, ("namespaceA/gang-a", "namespaceB/gang-b")),
        ('["namespaceB/gang-b"]', ("namespaceA/gang-a", "namespaceB/gang-b")),
        ('["z/last", "a/first", "z/last"]', ("a/first", "namespaceA/gang-a", "z/last")),
        ('[" other/gang "]', ("namespaceA/gang-a", "other/gang")),
        ("[]", ("namespaceA/gang-a",)),
        ("", ("namespaceA/gang-a",)),
        ("  ", ("namespaceA/gang-a",)),
    ],
)
def test_groups_are_deduplicated_sorted_and_always_include_the_gang_itself(
    value: str, expected: tuple[str, ...]
) -> None:
    spec = annotation_gang(namespace="namespaceA", groups=value)
    assert spec.groups == expected
    assert spec.issues == ()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("namespaceA/gang-a,namespaceB/gang-b", 'is not a JSON list of "namespace/name" strings'),
        ('["namespaceA/gang-a"', 'is not a JSON list of "namespace/name" strings'),
        ('"namespaceB/gang-b"', 'is not a JSON list of "namespace/name" strings'),
        ('{"a": "b/c"}', 'is not a JSON list of "namespace/name" strings'),
        ('["gang-b"]', 'has an element "gang-b" that is not "namespace/name"'),
        ('["ns/a/b"]', 'has an element "ns/a/b" that is not "namespace/name"'),
        ('["/gang-b"]', 'has an element "/gang-b" that is not "namespace/name"'),
        ('["ns/"]', 'has an element "ns/" that is not "namespace/name"'),
        ('["ns/gang b"]', 'has an element "ns/gang b" that is not "namespace/name"'),
        ('["ns/a", 5]', "has an element 5 that is not a string"),
        ('[["ns/a"]]', 'has an element ["ns/a"] that is not a string'),
    ],
)
def test_malformed_groups_leave_the_gang_alone_with_an_issue(value: str, problem: str) -> None:
    spec = annotation_gang(groups=value)
    assert spec.groups == ("default/gang-a",)
    assert spec.issues == (ConfigIssue(GROUPS_KEY, value, problem, "scheduling the gang alone"),)


def test_the_exact_message_for_a_group_element_without_a_slash() -> None:
    spec = annotation_gang(groups='["gang-b"]')
    assert messages(spec) == [
        'gang.scheduling.koordinator.sh/groups="["gang-b"]" has an element "gang-b" that is not '
        '"namespace/name"; scheduling the gang alone'
    ]


# --- match-policy -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("once-satisfied", MatchPolicy.ONCE_SATISFIED),
        ("only-waiting", MatchPolicy.ONLY_WAITING),
        ("waiting-and-running", MatchPolicy.WAITING_AND_RUNNING),
        (" Only-Waiting ", MatchPolicy.ONLY_WAITING),
    ],
)
def test_match_policy_accepts_the_three_policies(value: str, expected: MatchPolicy) -> None:
    spec = annotation_gang(match_policy=value)
    assert spec.match_policy is expected
    assert spec.issues == ()


@pytest.mark.parametrize("value", ["always", "", "once_satisfied"])
def test_an_unknown_match_policy_falls_back_to_once_satisfied(value: str) -> None:
    spec = annotation_gang(match_policy=value)
    assert spec.match_policy is MatchPolicy.ONCE_SATISFIED
    assert messages(spec) == [
        f'gang.scheduling.koordinator.sh/match-policy="{value}" is not once-satisfied, '
        "only-waiting or waiting-and-running; using once-satisfied"
    ]


# --- network-topology-spec and index ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "rules"),
    [
        (SEED_TOPOLOGY, 3),
        ('{"gatherStrategy": [{"layer": "spineLayer", "strategy": "MustGather"}]}', 1),
        ('{"gatherStrategy": []}', 0),
        ('{"gatherStrategy": [{"layer": "L", "strategy": "MustGather", "x": 1}], "y": 2}', 1),
    ],
)
def test_a_well_formed_topology_spec_is_kept_verbatim(value: str, rules: int) -> None:
    spec = annotation_gang(network_topology_spec=value)
    assert spec.network_topology_spec is not None
    assert spec.network_topology_spec.text == value
    assert len(spec.network_topology_spec.rules) == rules
    assert spec.issues == ()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{gatherStrategy: []}", "is not valid JSON"),
        ("", "is not valid JSON"),
        ("[]", "is not a JSON object"),
        ("{}", "has no gatherStrategy list"),
        ('{"gatherStrategy": {"layer": "L"}}', "has no gatherStrategy list"),
        ('{"gatherStrategy": ["L"]}', "has gatherStrategy[0] that is not an object"),
        (
            '{"gatherStrategy": [{"strategy": "MustGather"}]}',
            "has gatherStrategy[0].layer that is not a non-empty string (nor a labelKey)",
        ),
        (
            '{"gatherStrategy": [{"layer": "A", "strategy": "MustGather"},'
            ' {"layer": "B", "strategy": "Gather"}]}',
            "has gatherStrategy[1].strategy that is not PreferGather or MustGather",
        ),
    ],
)
def test_a_malformed_topology_spec_is_dropped_with_an_issue(value: str, problem: str) -> None:
    spec = annotation_gang(network_topology_spec=value)
    assert spec.network_topology_spec is None
    assert spec.issues == (
        ConfigIssue(
            NETWORK_TOPOLOGY_SPEC_KEY, value, problem, "placing without topology constraints"
        ),
    )


# --- several bad values at once ---------------------------------------------------------------


def test_every_bad_value_yields_exactly_one_issue_in_a_fixed_order() -> None:
    spec = annotation_gang(
        total_number="many",
        mode="Sloppy",
        waiting_time="forever",
        groups="gang-b",
        match_policy="sometimes",
        network_topology_spec="{",
    )
    assert [issue.key for issue in spec.issues] == [
        TOTAL_NUMBER_KEY,
        MODE_KEY,
        WAITING_TIME_KEY,
        GROUPS_KEY,
        MATCH_POLICY_KEY,
        NETWORK_TOPOLOGY_SPEC_KEY,
    ]
    assert not any(issue.fatal for issue in spec.issues)
    assert spec == GangSpec(
        namespace="default",
        name="gang-a",
        source=GangSource.ANNOTATIONS,
        min_available=5,
        total_number=5,
        mode=GangMode.STRICT,
        waiting_time=600.0,
        groups=("default/gang-a",),
        match_policy=MatchPolicy.ONCE_SATISFIED,
        network_topology_spec=None,
        issues=spec.issues,
    )
