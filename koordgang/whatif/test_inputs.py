"""The file a user asks about: pods and gang objects, or an error naming the field."""

from __future__ import annotations

import pytest

from koordgang.whatif.inputs import (
    COMPLETION_INDEX,
    WhatIfError,
    make_pods,
    priorities_of,
    priority_class_names,
    read_input,
)

SCHEDULER = "koord-scheduler"

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  parallelism: 3
  completions: 5
  completionMode: Indexed
  template:
    metadata:
      labels: {app: train}
      annotations:
        gang.scheduling.koordinator.sh/name: train
        gang.scheduling.koordinator.sh/min-available: "3"
    spec:
      schedulerName: koord-scheduler
      priorityClassName: high
      containers: [{name: main, image: x, resources: {requests: {cpu: "2"}}}]
"""

PODGROUP = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pg, namespace: ml}
spec: {minMember: 2}
"""


def _pod(name: str, scheduler: str = SCHEDULER) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  schedulerName: {scheduler}
  containers: [{{name: main, image: x}}]
"""


def test_a_job_makes_the_pods_its_controller_makes_at_once() -> None:
    parsed = read_input(JOB, SCHEDULER)
    assert [p["metadata"]["name"] for p in parsed.pods] == ["train-0", "train-1", "train-2"]
    first = parsed.pods[0]["metadata"]
    assert first["namespace"] == "ml"
    assert first["labels"]["batch.kubernetes.io/job-name"] == "train"
    assert first["labels"]["app"] == "train"
    assert first["annotations"][COMPLETION_INDEX] == "0"
    assert parsed.sources == ["Job ml/train"]
    assert priority_class_names(parsed.pods) == {"high"}
    pods = make_pods(parsed.pods, {"high": 1000}, 1_700_000_000.0)
    assert [p.priority for p in pods] == [1000] * 3
    assert len({p.uid for p in pods}) == 3
    assert pods[0].requests["cpu"] == 2000


def test_workloads_with_replicas_and_plain_pods_in_one_file() -> None:
    deployment = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    spec:
      schedulerName: koord-scheduler
      containers: [{name: main, image: x}]
"""
    parsed = read_input("---\n".join([deployment, _pod("solo"), PODGROUP]), SCHEDULER)
    assert len(parsed.pods) == 3
    assert parsed.pods[2]["metadata"]["name"] == "solo"
    assert [g.api.name for g in parsed.gang_objects] == ["scheduler-plugins"]
    assert parsed.gang_objects[0].info.min_member == 2


def test_a_json_list_is_read_too() -> None:
    text = (
        '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", '
        '"metadata": {"name": "a"}, "spec": {"schedulerName": "koord-scheduler", '
        '"containers": [{"name": "m"}]}}]}'
    )
    assert [p["metadata"]["name"] for p in read_input(text, SCHEDULER).pods] == ["a"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", ["kind", "Service"]),
        (PODGROUP, ["makes no pod"]),
        (
            "apiVersion: scheduling.example.com/v1\nkind: PodGroup\nmetadata: {name: g}\n",
            ["apiVersion", "not a gang API"],
        ),
        (
            PODGROUP.replace("minMember: 2", "minMember: many") + "---\n" + _pod("a"),
            ["PodGroup ml/pg", "minMember"],
        ),
        (_pod("a", scheduler="default-scheduler"), ["spec.schedulerName", "default-scheduler"]),
        ("a: [", ["neither YAML nor JSON"]),
        (
            JOB.replace("parallelism: 3", "parallelism: -1"),
            ["Job ml/train", "spec.parallelism"],
        ),
    ],
)
def test_bad_input_names_the_field(text: str, words: list[str]) -> None:
    with pytest.raises(WhatIfError) as caught:
        read_input(text, SCHEDULER)
    for word in words:
        assert word in str(caught.value)


def test_a_missing_priority_class_is_named() -> None:
    parsed = read_input(JOB, SCHEDULER)
    with pytest.raises(WhatIfError, match=r"spec.priorityClassName: PriorityClass 'high'"):
        make_pods(parsed.pods, {}, 0.0)


def test_a_malformed_pod_names_the_field() -> None:
    text = JOB.replace('cpu: "2"', "cpu: lots")
    parsed = read_input(text, SCHEDULER)
    with pytest.raises(WhatIfError, match=r"pod ml/train-0: .*cpu"):
        make_pods(parsed.pods, {"high": 1}, 0.0)


def test_priority_classes_and_the_global_default() -> None:
    classes = [
        {"metadata": {"name": "high"}, "value": 1000},
        {"metadata": {"name": "normal"}, "value": 10, "globalDefault": True},
    ]
    assert priorities_of(classes) == {"high": 1000, "normal": 10, "": 10}
    parsed = read_input(_pod("a"), SCHEDULER)
    assert make_pods(parsed.pods, priorities_of(classes), 0.0)[0].priority == 10
