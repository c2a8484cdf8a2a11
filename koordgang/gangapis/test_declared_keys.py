"""Every key a gang API reads on a pod is tested, from a table written out by hand (the keys as
the APIs' users write them, not the product's constants). A key an API declares without a line
here fails the suite, and so does a line whose key no API declares any more."""

from __future__ import annotations

from typing import Any

import pytest

from koordgang.gangapis import GANG_APIS, Resolve
from koordgang.model.gang import GangSource
from koordgang.model.gang_keys import POD_ANNOTATION_KEYS
from koordgang.model.pod import PodInfo, parse_pod

#: (API, where, key) -> the kind of declaration a pod naming its gang that way makes.
NAMES: dict[tuple[str, str, str], GangSource] = {
    ("koordinator", "label", "pod-group.scheduling.sigs.k8s.io"): GangSource.POD_GROUP,
    ("koordinator", "label", "pod-group.scheduling.sigs.k8s.io/name"): GangSource.LABELS,
    ("koordinator", "annotation", "gang.scheduling.koordinator.sh/name"): GangSource.ANNOTATIONS,
    ("scheduler-plugins", "label", "scheduling.x-k8s.io/pod-group"): GangSource.POD_GROUP,
    ("volcano", "annotation", "scheduling.k8s.io/group-name"): GangSource.POD_GROUP,
    ("volcano", "annotation", "scheduling.volcano.sh/group-name"): GangSource.POD_GROUP,
    ("kueue", "label", "kueue.x-k8s.io/pod-group-name"): GangSource.LABELS,
    ("kubernetes", "field", "spec.schedulingGroup.podGroupName"): GangSource.POD_GROUP,
}

#: Annotations some API reads besides the names (its options, its minimum, its tasks): an
#: example of each, which the feeds must keep.
OTHER_ANNOTATIONS = (
    "gang.scheduling.koordinator.sh/min-available",
    "gang.scheduling.koordinator.sh/network-topology-spec",
    "scheduling.koordinator.sh/soft-eviction",
    "volcano.sh/task-spec",
    "kueue.x-k8s.io/pod-group-total-count",
)


def pod_naming(where: str, key: str, name: str = "job") -> PodInfo:
    """A pod as the feeds read it, naming a gang one way only."""
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "u"}
    spec: dict[str, Any] = {"schedulerName": "koord-scheduler", "containers": [{"name": "c"}]}
    if where == "label":
        metadata["labels"] = {key: name}
    elif where == "annotation":
        metadata["annotations"] = {key: name}
    else:
        assert key == "spec.schedulingGroup.podGroupName"
        spec["schedulingGroup"] = {"podGroupName": name}
    obj = {"metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}
    return parse_pod(obj)


def test_the_apis_read_the_pod_annotations_the_model_keeps_and_no_others() -> None:
    # parse_pod keeps the model's declaration: an API reading a key not declared there would
    # never see it, and a key there that no API reads is held for nothing.
    read = [key for api in GANG_APIS for key in api.pod_keys]
    assert sorted(read) == sorted(POD_ANNOTATION_KEYS)


def test_every_way_an_api_declares_is_in_the_table_and_nothing_else() -> None:
    declared = {(api.name, way.where.value, way.key) for api in GANG_APIS for way in api.names}
    assert declared == set(NAMES)


@pytest.mark.parametrize(("api", "where", "key"), sorted(NAMES))
def test_a_pod_naming_its_gang_one_way_belongs_to_that_gang_of_that_api(
    api: str, where: str, key: str
) -> None:
    pod = pod_naming(where, key, name=" job ")

    [ref] = Resolve(GANG_APIS)(pod)

    assert (ref.api, ref.key, ref.source) == (api, "ns/job", NAMES[(api, where, key)])


@pytest.mark.parametrize(("api", "where", "key"), sorted(NAMES))
def test_a_blank_name_names_no_gang(api: str, where: str, key: str) -> None:
    assert Resolve(GANG_APIS)(pod_naming(where, key, name="  ")) == []


@pytest.mark.parametrize("key", [k for _, where, k in NAMES if where == "annotation"])
def test_the_feeds_keep_every_name_annotation(key: str) -> None:
    assert pod_naming("annotation", key).annotations == {key: "job"}


@pytest.mark.parametrize("key", OTHER_ANNOTATIONS)
def test_the_feeds_keep_the_other_annotations_the_apis_read(key: str) -> None:
    obj = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": {key: "1"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    assert parse_pod(obj).annotations == {key: "1"}


def test_the_feeds_drop_annotations_no_api_reads() -> None:
    obj = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u",
            "annotations": {"example.com/note": "x", "kubectl.kubernetes.io/last-applied": "{}"},
        },
        "spec": {"containers": [{"name": "c"}]},
    }
    assert parse_pod(obj).annotations == {}
