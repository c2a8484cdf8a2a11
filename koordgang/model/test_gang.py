"""The one internal gang: its identity, the ways a pod names it, and what is said of values
that cannot be used."""

from typing import Any

from koordgang.model.gang import (
    KOORDINATOR,
    ConfigIssue,
    GangName,
    GangRef,
    GangSource,
    NameIn,
)
from koordgang.model.koordinator import (
    GROUPS_KEY,
    MODE_KEY,
    NETWORK_TOPOLOGY_SPEC_KEY,
)
from koordgang.model.pod import parse_pod


def test_a_gang_key_is_namespace_slash_name() -> None:
    assert GangRef("team-a", "train", GangSource.ANNOTATIONS).key == "team-a/train"


def _pod(labels: dict[str, str], annotations: dict[str, str], group: str = "") -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return parse_pod(
        {
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "uid": "u",
                "labels": labels,
                "annotations": annotations,
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }
    )


def test_a_gang_name_reads_its_label_annotation_or_field_and_makes_its_ref() -> None:
    by_label = GangName(NameIn.LABEL, "x/gang", GangSource.LABELS, min_annotation="x/min")
    key = "scheduling.k8s.io/group-name"  # an annotation a gang API reads (parse_pod keeps it)
    by_annotation = GangName(NameIn.ANNOTATION, key, GangSource.POD_GROUP)
    by_field = GangName(NameIn.SCHEDULING_GROUP, "spec.schedulingGroup", GangSource.POD_GROUP)
    pod = _pod({"x/gang": " a "}, {key: "b"}, group="c")

    label_ref, annotation_ref = by_label.ref_of(pod, "api"), by_annotation.ref_of(pod, "api")
    assert label_ref is not None and annotation_ref is not None
    assert label_ref == GangRef("ns", "a", GangSource.LABELS, api="api")
    assert label_ref.min_annotation == "x/min"
    # A gang named by its group object says where (issues name it); one by labels does not.
    assert annotation_ref.named_by == key
    assert label_ref.named_by == ""
    assert by_field.ref_of(pod, "api") == GangRef("ns", "c", GangSource.POD_GROUP, api="api")
    blank = _pod({"x/gang": "  "}, {})
    assert by_label.ref_of(blank, "api") is None
    assert by_field.ref_of(blank, KOORDINATOR) is None


# --- ConfigIssue ------------------------------------------------------------------------------


def test_a_config_issue_message_names_key_value_problem_and_action() -> None:
    issue = ConfigIssue(MODE_KEY, "Sloppy", "is not Strict or NonStrict", "using Strict")
    assert issue.message() == (
        'gang.scheduling.koordinator.sh/mode="Sloppy" is not Strict or NonStrict; using Strict'
    )
    assert issue.fatal is False


def test_a_config_issue_keeps_at_most_100_characters_of_the_value() -> None:
    issue = ConfigIssue(GROUPS_KEY, "x" * 500, "is not valid", "scheduling the gang alone")
    assert issue.value == "x" * 97 + "..."
    assert len(issue.value) == 100


def test_a_config_issue_flattens_line_breaks_so_its_message_is_one_line() -> None:
    issue = ConfigIssue(NETWORK_TOPOLOGY_SPEC_KEY, '{\n  "a": 1\n}\n', "is bad", "ignoring it")
    assert issue.value == '{ "a": 1 }'
    assert "\n" not in issue.message()
