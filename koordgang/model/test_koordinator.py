"""Koordinator's dialect: how its pods name a gang, ranks, and the timeout marker."""

import pytest

from koordgang.model.gang import (
    GangRef,
    GangSource,
)
from koordgang.model.koordinator import (
    LIGHTWEIGHT_NAME_LABEL,
    NAME_KEY,
    NETWORK_TOPOLOGY_INDEX_KEY,
    POD_GROUP_LABEL,
    TIMEOUT_KEY,
    gang_ref_of,
    is_timed_out,
    topology_index,
)

# --- how a pod names its gang ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        ({POD_GROUP_LABEL: "pg"}, {}, GangRef("ns", "pg", GangSource.POD_GROUP)),
        ({LIGHTWEIGHT_NAME_LABEL: "lw"}, {}, GangRef("ns", "lw", GangSource.LABELS)),
        ({}, {NAME_KEY: "ann"}, GangRef("ns", "ann", GangSource.ANNOTATIONS)),
        (
            {POD_GROUP_LABEL: "pg", LIGHTWEIGHT_NAME_LABEL: "lw"},
            {NAME_KEY: "ann"},
            GangRef("ns", "pg", GangSource.POD_GROUP),
        ),
        (
            {LIGHTWEIGHT_NAME_LABEL: "lw"},
            {NAME_KEY: "ann"},
            GangRef("ns", "lw", GangSource.LABELS),
        ),
        (
            {POD_GROUP_LABEL: "", LIGHTWEIGHT_NAME_LABEL: "lw"},
            {},
            GangRef("ns", "lw", GangSource.LABELS),
        ),
        (
            {POD_GROUP_LABEL: "", LIGHTWEIGHT_NAME_LABEL: ""},
            {NAME_KEY: "ann"},
            GangRef("ns", "ann", GangSource.ANNOTATIONS),
        ),
        ({}, {NAME_KEY: "  ann  "}, GangRef("ns", "ann", GangSource.ANNOTATIONS)),
        ({POD_GROUP_LABEL: ""}, {NAME_KEY: "   "}, None),
        ({"app": "web"}, {"note": "x"}, None),
        # The name annotation is not a label, and the PodGroup label is not an annotation.
        ({NAME_KEY: "ann"}, {POD_GROUP_LABEL: "pg"}, None),
    ],
)
def test_gang_ref_of_takes_the_first_non_empty_declaration_in_precedence_order(
    labels: dict[str, str], annotations: dict[str, str], expected: GangRef | None
) -> None:
    assert gang_ref_of("ns", labels, annotations) == expected


@pytest.mark.parametrize(
    ("annotations", "expected_index", "message"),
    [
        ({}, None, None),
        ({NETWORK_TOPOLOGY_INDEX_KEY: "1"}, 1, None),
        ({NETWORK_TOPOLOGY_INDEX_KEY: "0"}, 0, None),
        ({NETWORK_TOPOLOGY_INDEX_KEY: " 12 "}, 12, None),
        (
            {NETWORK_TOPOLOGY_INDEX_KEY: "first"},
            None,
            'gang.scheduling.koordinator.sh/network-topology-index="first" is not an integer; '
            "using no index",
        ),
        (
            {NETWORK_TOPOLOGY_INDEX_KEY: "-1"},
            None,
            'gang.scheduling.koordinator.sh/network-topology-index="-1" is negative; '
            "using no index",
        ),
        (
            {NETWORK_TOPOLOGY_INDEX_KEY: "1" * 30},
            None,
            f'gang.scheduling.koordinator.sh/network-topology-index="{"1" * 30}" is too large; '
            "using no index",
        ),
    ],
)
def test_topology_index_is_a_non_negative_integer_or_none_with_an_issue(
    annotations: dict[str, str], expected_index: int | None, message: str | None
) -> None:
    index, issue = topology_index(annotations)
    assert index == expected_index
    assert (issue.message() if issue else None) == message


# --- timeout marker ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({TIMEOUT_KEY: "true"}, True),
        ({TIMEOUT_KEY: "false"}, False),
        ({TIMEOUT_KEY: ""}, False),
        ({}, False),
    ],
)
def test_is_timed_out_reads_the_timeout_annotation(
    annotations: dict[str, str], expected: bool
) -> None:
    assert is_timed_out(annotations) is expected
