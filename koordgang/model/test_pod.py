import copy
import dataclasses
from typing import Any

import pytest

from koordgang.model.affinity import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)
from koordgang.model.labels import LabelSelector, LabelSelectorRequirement
from koordgang.model.pod import (
    HostPort,
    PodInfo,
    PodParseError,
    PodShape,
    host_ports,
    parse_pod,
    pod_requests,
    ports_conflict,
)
from koordgang.model.pod_affinity import PodAffinity, PodAffinityTerm
from koordgang.model.resources import Resources
from koordgang.model.spread import TopologySpreadConstraint
from koordgang.model.taints import Toleration

GPU = "nvidia.com/gpu"


def container(
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    restart_policy: str | None = None,
    name: str = "c",
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    result: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources}
    if restart_policy is not None:
        result["restartPolicy"] = restart_policy
    return result


def sidecar(requests: dict[str, Any]) -> dict[str, Any]:
    return container(requests, restart_policy="Always", name="sidecar")


def pod(spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "worker-0", "namespace": "team-a", **metadata},
        "spec": {"containers": [container()]} if spec is None else spec,
    }


FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "train-worker-3",
        "namespace": "ml",
        "uid": "0b6c3e1a-5f0e-4c8e-9a77-2b1d2f6b9f10",
        "resourceVersion": "48213",
        "creationTimestamp": "2024-01-02T03:04:05Z",
        "labels": {"pod-group.scheduling.sigs.k8s.io": "train", "app": "train"},
        "annotations": {"gang.scheduling.koordinator.sh/waiting-time": "3600s"},
    },
    "spec": {
        "schedulerName": "koord-scheduler",
        "priority": 1000,
        "preemptionPolicy": "Never",
        "nodeSelector": {"network.topology.nvidia.com/block": "b1"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "gpu-model", "operator": "In", "values": ["V100"]}
                            ]
                        }
                    ]
                }
            }
        },
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [container({"cpu": "2", "memory": "8Gi", GPU: "4"}, {GPU: "4"})],
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "node-7",
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
            },
        ],
    },
}


def test_a_full_pod_parses_every_field_the_scheduler_uses() -> None:
    info = parse_pod(FULL_POD)
    assert info.uid == "0b6c3e1a-5f0e-4c8e-9a77-2b1d2f6b9f10"
    assert info.namespace == "ml"
    assert info.name == "train-worker-3"
    assert info.key == "ml/train-worker-3"
    assert info.scheduler_name == "koord-scheduler"
    assert info.node_name == ""
    assert info.nominated_node_name == "node-7"
    assert info.phase == "Pending"
    assert info.priority == 1000
    assert info.preemption_policy == "Never"
    assert info.creation_timestamp == 1704164645.0
    assert info.deletion_timestamp is None
    assert info.resource_version == "48213"
    assert info.labels == {"pod-group.scheduling.sigs.k8s.io": "train", "app": "train"}
    assert info.annotations == {"gang.scheduling.koordinator.sh/waiting-time": "3600s"}
    assert info.requests == Resources({"cpu": 2000, "memory": 8589934592, GPU: 4})
    assert info.node_selector == {"network.topology.nvidia.com/block": "b1"}
    assert info.required_affinity == NodeSelector(
        (NodeSelectorTerm((NodeSelectorRequirement("gpu-model", "In", ("V100",)),)),)
    )
    assert info.tolerations == (Toleration(GPU, "Exists", "", "NoSchedule"),)
    assert info.conditions_pod_scheduled == (
        "False",
        "Unschedulable",
        "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
    )
    assert (bool(info.node_name), info.is_terminal, info.is_terminating) == (False, False, False)


def test_a_minimal_pod_gets_kubernetes_defaults() -> None:
    info = parse_pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    assert info.namespace == "default"
    assert info.key == "default/p"
    assert info.uid == ""
    assert info.scheduler_name == "default-scheduler"
    assert info.priority == 0
    assert info.preemption_policy == "PreemptLowerPriority"
    assert info.phase == "Pending"
    assert info.creation_timestamp == 0.0
    assert info.requests == Resources.EMPTY
    assert info.required_affinity is None
    assert info.tolerations == ()
    assert info.conditions_pod_scheduled is None
    assert info.labels == {} and info.annotations == {} and info.node_selector == {}
    assert info.preferred_affinity == ()
    assert info.pod_affinity is None
    assert info.spread_constraints == ()
    assert info.host_ports == ()
    assert info.scheduling_gates == ()
    assert info.pvc_names == ()


def test_the_pod_count_is_not_part_of_the_requests() -> None:
    info = parse_pod(pod({"containers": [container({"cpu": "1"})]}))
    assert "pods" not in info.requests
    assert info.requests == Resources({"cpu": 1000})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": []}, {}),
        ({"containers": [container({"cpu": "100m"})]}, {"cpu": 100}),
        (
            {
                "containers": [
                    container({"cpu": "100m", "memory": "1Gi"}),
                    container({"cpu": "1.5"}),
                ]
            },
            {"cpu": 1600, "memory": 1073741824},
        ),
        (
            {
                "containers": [
                    container({"cpu": "0.1", "memory": "128974848"}),
                    container({"memory": "129e6"}),
                ]
            },
            {"cpu": 100, "memory": 257974848},
        ),
        ({"containers": [container({"cpu": "1u"})]}, {"cpu": 1}),
        ({"containers": [container({GPU: "2"}), container({GPU: "1"})]}, {GPU: 3}),
        ({"containers": [container({"hugepages-2Mi": "100Mi"})]}, {"hugepages-2Mi": 104857600}),
        (
            {"containers": [container({"ephemeral-storage": "2Gi"})]},
            {"ephemeral-storage": 2147483648},
        ),
    ],
)
def test_containers_requests_add_up(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(spec) == Resources(expected)


def test_init_container_larger_than_containers_sets_the_request() -> None:
    spec = {
        "initContainers": [container({"cpu": "2", "memory": "1Gi"})],
        "containers": [container({"cpu": "500m", "memory": "2Gi"}), container({"cpu": "500m"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 2000, "memory": 2147483648})


def test_init_containers_run_one_at_a_time_so_only_the_largest_counts() -> None:
    spec = {
        "initContainers": [container({"cpu": "3"}), container({"cpu": "2", GPU: "1"})],
        "containers": [container({"cpu": "1"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 3000, GPU: 1})


def test_init_container_smaller_than_containers_changes_nothing() -> None:
    spec = {"initContainers": [container({"cpu": "100m"})], "containers": [container({"cpu": "1"})]}
    assert pod_requests(spec) == Resources({"cpu": 1000})


def test_a_sidecar_adds_to_the_containers_sum() -> None:
    spec = {
        "initContainers": [sidecar({"cpu": "200m"})],
        "containers": [container({"cpu": "300m"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 500})


def test_a_sidecar_adds_to_init_containers_started_after_it() -> None:
    # The init container runs alongside the sidecar before it: 100m + 700m = 800m, more than
    # the running total of 300m + 100m + 200m.
    spec = {
        "initContainers": [
            sidecar({"cpu": "100m"}),
            container({"cpu": "700m"}),
            sidecar({"cpu": "200m"}),
        ],
        "containers": [container({"cpu": "300m"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 800})


def test_a_sidecar_does_not_add_to_init_containers_started_before_it() -> None:
    spec = {
        "initContainers": [container({"cpu": "1"}), sidecar({"cpu": "200m"})],
        "containers": [container({"cpu": "300m"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 1000})


def test_a_sidecar_larger_than_everything_counts_once_in_the_running_total() -> None:
    spec = {
        "initContainers": [sidecar({"memory": "4Gi"})],
        "containers": [container({"memory": "1Gi"})],
    }
    assert pod_requests(spec) == Resources({"memory": 5 * 1073741824})


def test_an_init_container_with_restart_policy_never_is_not_a_sidecar() -> None:
    spec = {
        "initContainers": [container({"cpu": "200m"}, restart_policy="Never")],
        "containers": [container({"cpu": "300m"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 300})


def test_a_resource_with_only_a_limit_requests_the_limit() -> None:
    spec = {"containers": [container({"cpu": "100m"}, {"cpu": "1", "memory": "1Gi", GPU: "2"})]}
    assert pod_requests(spec) == Resources({"cpu": 100, "memory": 1073741824, GPU: 2})


def test_limits_default_requests_for_init_containers_too() -> None:
    spec = {
        "initContainers": [container(limits={"cpu": "4"})],
        "containers": [container({"cpu": "1"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 4000})


def test_an_explicit_zero_request_is_not_replaced_by_the_limit() -> None:
    spec = {"containers": [container({"cpu": "0"}, {"cpu": "2"})]}
    assert pod_requests(spec) == Resources.EMPTY


def test_overhead_is_added_on_top() -> None:
    spec = {
        "initContainers": [container({"cpu": "2"})],
        "containers": [container({"cpu": "500m"})],
        "overhead": {"cpu": "250m", "memory": "120Mi"},
    }
    assert pod_requests(spec) == Resources({"cpu": 2250, "memory": 125829120})


def test_pod_level_requests_replace_the_containers_cpu_and_memory() -> None:
    spec = {
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}},
        "containers": [container({"cpu": "1", "memory": "1Gi", GPU: "1"})],
        "overhead": {"cpu": "100m"},
    }
    assert pod_requests(spec) == Resources({"cpu": 4100, "memory": 8589934592, GPU: 1})


def test_pod_level_requests_ignore_resources_kubernetes_does_not_support_there() -> None:
    spec = {
        "resources": {"requests": {GPU: "8", "hugepages-1Gi": "2Gi"}},
        "containers": [container({GPU: "1"})],
    }
    assert pod_requests(spec) == Resources({GPU: 1, "hugepages-1Gi": 2147483648})


def test_a_pod_level_limit_stands_in_for_a_request_only_where_no_container_asks() -> None:
    spec = {
        "resources": {"limits": {"cpu": "4", "memory": "8Gi"}},
        "containers": [container({"cpu": "1"})],
    }
    assert pod_requests(spec) == Resources({"cpu": 1000, "memory": 8589934592})


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            pod({"containers": [container({"cpu": "lots"})]}),
            'spec.containers[0].resources.requests[cpu]: invalid quantity "lots"',
        ),
        (
            pod({"containers": [container(), container(limits={"memory": "1GB"})]}),
            'spec.containers[1].resources.limits[memory]: invalid quantity "1GB"',
        ),
        (
            pod({"initContainers": [container({GPU: "-1"})], "containers": []}),
            'spec.initContainers[0].resources.requests[nvidia.com/gpu]: invalid quantity "-1": '
            "must not be negative",
        ),
        (
            pod({"containers": [], "overhead": {"cpu": "1 core"}}),
            'spec.overhead[cpu]: invalid quantity "1 core"',
        ),
        (
            pod({"containers": [], "resources": {"requests": {"memory": "x"}}}),
            'spec.resources.requests[memory]: invalid quantity "x"',
        ),
        (
            pod(
                {
                    "containers": [],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "zone", "operator": "Equals", "values": ["a"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                }
            ),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            '.nodeSelectorTerms[0].matchExpressions[0].operator: unknown operator "Equals" '
            "(expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt)",
        ),
        (
            pod({"containers": [], "tolerations": [{"key": "a", "tolerationSeconds": "5m"}]}),
            'spec.tolerations[0].tolerationSeconds: must be an integer, got "5m"',
        ),
        (
            pod(creationTimestamp="yesterday"),
            'metadata.creationTimestamp: invalid timestamp "yesterday"',
        ),
        (pod({"containers": {"name": "c"}}), 'spec.containers: expected a list, got {"name": "c"}'),
        (pod({"containers": ["c"]}), 'spec.containers[0]: expected an object, got "c"'),
        (
            pod({"containers": [], "priority": "high"}),
            'spec.priority: expected an integer, got "high"',
        ),
        (pod(labels={"tier": 1}), "metadata.labels[tier]: expected a string, got 1"),
        (
            pod({"containers": [{"name": "c", "ports": [{"hostPort": "80"}]}]}),
            'spec.containers[0].ports[0].hostPort: expected an integer, got "80"',
        ),
        (
            pod({"containers": [{"name": "c", "ports": [{"hostPort": 70000}]}]}),
            "spec.containers[0].ports[0].hostPort: must be from 1 to 65535, got 70000",
        ),
        (
            pod({"containers": [{"name": "c", "ports": [{"containerPort": 1}, {"hostPort": -1}]}]}),
            "spec.containers[0].ports[1].hostPort: must be from 1 to 65535, got -1",
        ),
        (
            pod({"containers": [{"name": "c", "ports": [{"hostPort": 80, "protocol": "HTTP"}]}]}),
            'spec.containers[0].ports[0].protocol: must be one of TCP, UDP, SCTP, got "HTTP"',
        ),
        (
            pod({"containers": [{"name": "c", "ports": {"hostPort": 80}}]}),
            'spec.containers[0].ports: expected a list, got {"hostPort": 80}',
        ),
        (
            pod(
                {
                    "containers": [],
                    "initContainers": [
                        {"name": "s", "restartPolicy": "Always", "ports": [{"hostPort": 1.5}]}
                    ],
                }
            ),
            "spec.initContainers[0].ports[0].hostPort: expected an integer, got 1.5",
        ),
        (
            pod({"containers": [], "schedulingGates": [{"name": "a"}, {}]}),
            "spec.schedulingGates[1].name: missing",
        ),
        (
            pod({"containers": [], "schedulingGates": ["a"]}),
            'spec.schedulingGates[0]: expected an object, got "a"',
        ),
        (
            pod({"containers": [], "volumes": [{"name": "d", "persistentVolumeClaim": {}}]}),
            "spec.volumes[0].persistentVolumeClaim.claimName: missing",
        ),
        (
            pod({"containers": [], "volumes": [{"name": "d", "persistentVolumeClaim": "data"}]}),
            'spec.volumes[0].persistentVolumeClaim: expected an object, got "data"',
        ),
        (
            pod({"containers": [], "volumes": [{"ephemeral": {"volumeClaimTemplate": {}}}]}),
            "spec.volumes[0].name: missing",
        ),
        (
            pod(
                {
                    "containers": [],
                    "topologySpreadConstraints": [
                        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                    ],
                }
            ),
            "spec.topologySpreadConstraints[0].maxSkew: must be an integer of at least 1, got 0",
        ),
        (
            pod(
                {
                    "containers": [],
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]
                        }
                    },
                }
            ),
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            '.topologyKey: must be a non-empty string, got ""',
        ),
        (
            pod(
                {
                    "containers": [],
                    "affinity": {
                        "nodeAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 200, "preference": {}}
                            ]
                        }
                    },
                }
            ),
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".weight: must be an integer from 1 to 100, got 200",
        ),
        (
            pod(
                {
                    "containers": [],
                    "affinity": {
                        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": {}}
                    },
                }
            ),
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: "
            "expected a list, got {}",
        ),
        ({"metadata": {"namespace": "x"}, "spec": {}}, "metadata.name: missing"),
        ({"metadata": "p"}, 'metadata: expected an object, got "p"'),
    ],
)
def test_malformed_pods_raise_pod_parse_error_naming_field_and_value(
    obj: dict[str, Any], message: str
) -> None:
    with pytest.raises(PodParseError) as caught:
        parse_pod(obj)
    assert str(caught.value).startswith(message)
    assert caught.value.path == message.split(": ", 1)[0]


def test_pod_parse_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_pod({"metadata": {}})


def test_a_bound_pod_reports_its_node() -> None:
    obj = copy.deepcopy(FULL_POD)
    obj["spec"]["nodeName"] = "node-3"
    obj["status"]["phase"] = "Running"
    info = parse_pod(obj)
    assert info.node_name == "node-3"
    assert info.is_terminal is False


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [
        ("Pending", False),
        ("Running", False),
        ("Unknown", False),
        ("Succeeded", True),
        ("Failed", True),
    ],
)
def test_only_succeeded_and_failed_pods_are_terminal(phase: str, terminal: bool) -> None:
    obj = pod()
    obj["status"] = {"phase": phase}
    assert parse_pod(obj).is_terminal is terminal


def test_a_pod_with_a_deletion_timestamp_is_terminating() -> None:
    info = parse_pod(pod(deletionTimestamp="2024-01-02T03:04:35Z"))
    assert info.deletion_timestamp == 1704164675.0
    assert info.is_terminating is True


def test_no_pod_scheduled_condition_reads_as_none() -> None:
    obj = pod()
    obj["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    assert parse_pod(obj).conditions_pod_scheduled is None


def test_pods_of_one_job_share_a_shape() -> None:
    first = copy.deepcopy(FULL_POD)
    second = copy.deepcopy(FULL_POD)
    second["metadata"].update(name="train-worker-4", uid="other", labels={"x": "y"})
    second["status"] = {"phase": "Pending"}
    a, b = parse_pod(first), parse_pod(second)
    assert a.shape == b.shape
    assert hash(a.shape) == hash(b.shape)
    assert {a.shape: "verdict"}[b.shape] == "verdict"


@pytest.mark.parametrize(
    "change",
    [
        lambda spec: spec["containers"][0]["resources"]["requests"].update(cpu="3"),
        lambda spec: spec["nodeSelector"].update({"network.topology.nvidia.com/block": "b2"}),
        lambda spec: spec["tolerations"].append({"key": "spot", "operator": "Exists"}),
        lambda spec: spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"][0]["matchExpressions"][0].update(values=["P100"]),
        lambda spec: spec["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
        lambda spec: spec["affinity"]["nodeAffinity"].update(
            preferredDuringSchedulingIgnoredDuringExecution=[
                {"weight": 10, "preference": {"matchExpressions": [ZONE_A]}}
            ]
        ),
    ],
    ids=[
        "requests",
        "node selector",
        "tolerations",
        "required affinity",
        "host ports",
        "preferred affinity",
    ],
)
def test_a_different_scheduling_constraint_gives_a_different_shape(change: Any) -> None:
    other = copy.deepcopy(FULL_POD)
    change(other["spec"])
    assert parse_pod(other).shape != parse_pod(FULL_POD).shape


def test_shape_ignores_node_selector_order() -> None:
    a = PodInfo(name="a", node_selector={"x": "1", "y": "2"})
    b = PodInfo(name="b", node_selector={"y": "2", "x": "1"})
    assert a.shape == b.shape


def test_replace_recomputes_key_and_shape() -> None:
    info = parse_pod(FULL_POD)
    moved = dataclasses.replace(info, namespace="other", requests=Resources({"cpu": 1}))
    assert moved.key == "other/train-worker-3"
    assert moved.shape.requests == Resources({"cpu": 1})
    assert info.key == "ml/train-worker-3"


def test_pod_info_is_frozen_and_hashable() -> None:
    info = parse_pod(FULL_POD)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.node_name = "node-1"  # type: ignore[misc]
    assert hash(info) == hash(parse_pod(FULL_POD))
    assert info == parse_pod(FULL_POD)


ZONE_A: dict[str, Any] = {"key": "zone", "operator": "In", "values": ["a"]}


def test_pods_of_one_job_with_the_same_ports_and_preferences_share_a_shape() -> None:
    first = copy.deepcopy(FULL_POD)
    first["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    first["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
        {"weight": 10, "preference": {"matchExpressions": [ZONE_A]}}
    ]
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "train-worker-4"
    a, b = parse_pod(first), parse_pod(second)
    assert a.shape.host_ports == (HostPort("TCP", "0.0.0.0", 80),)
    assert len(a.shape.preferred_affinity) == 1
    assert a.shape == b.shape
    assert hash(a.shape) == hash(b.shape)


@pytest.mark.parametrize(
    "change",
    [
        lambda obj: obj["metadata"]["labels"].update(app="other"),
        lambda obj: obj["spec"]["affinity"].update(
            podAntiAffinity={
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        ),
        lambda obj: obj["spec"].update(
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        ),
        lambda obj: obj["spec"].update(schedulingGates=[{"name": "wait"}]),
        lambda obj: obj["spec"].update(
            volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
        ),
    ],
    ids=["labels", "pod affinity", "spread constraints", "scheduling gates", "volumes"],
)
def test_constraints_that_depend_on_other_pods_or_objects_leave_the_shape_alone(
    change: Any,
) -> None:
    other = copy.deepcopy(FULL_POD)
    change(other)
    assert parse_pod(other) != parse_pod(FULL_POD)
    assert parse_pod(other).shape == parse_pod(FULL_POD).shape


def test_shapes_differing_only_in_host_ports_or_preferences_differ() -> None:
    base = PodShape(Resources.EMPTY, (), None, ())
    preferred = (
        PreferredSchedulingTerm(1, NodeSelectorTerm((NodeSelectorRequirement("z", "Exists"),))),
    )
    assert base == PodShape(Resources.EMPTY, (), None, (), (), ())
    assert base != PodShape(Resources.EMPTY, (), None, (), (HostPort("TCP", "0.0.0.0", 80),))
    assert base != PodShape(Resources.EMPTY, (), None, (), (), preferred)
    assert hash(PodShape(Resources.EMPTY, (), None, (), (), preferred)) == hash(
        PodShape(Resources.EMPTY, (), None, (), (), preferred)
    )


def containers_with_ports(*ports: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "c", "ports": list(ports)}]}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": [{"name": "c"}]}, ()),
        (containers_with_ports({"containerPort": 8080}), ()),
        # Zero means no host port.
        (containers_with_ports({"containerPort": 8080, "hostPort": 0}), ()),
        # Protocol defaults to TCP and the host IP to every address.
        (
            containers_with_ports({"containerPort": 80, "hostPort": 8080}),
            (("TCP", "0.0.0.0", 8080),),
        ),
        (
            containers_with_ports({"hostPort": 8080, "protocol": "", "hostIP": ""}),
            (("TCP", "0.0.0.0", 8080),),
        ),
        (
            containers_with_ports(
                {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}
            ),
            (("UDP", "10.0.0.1", 53),),
        ),
        # Duplicates collapse and the result is sorted by protocol, host IP and port.
        (
            {
                "containers": [
                    {
                        "name": "a",
                        "ports": [{"hostPort": 9000}, {"hostPort": 80, "protocol": "UDP"}],
                    },
                    {"name": "b", "ports": [{"hostPort": 443}, {"hostPort": 9000}]},
                ]
            },
            (("TCP", "0.0.0.0", 443), ("TCP", "0.0.0.0", 9000), ("UDP", "0.0.0.0", 80)),
        ),
        # Sidecars keep running, so their host ports count; other init containers' do not.
        (
            {
                "containers": [{"name": "c", "ports": [{"hostPort": 80}]}],
                "initContainers": [
                    {"name": "setup", "ports": [{"hostPort": 81}]},
                    {"name": "once", "restartPolicy": "Never", "ports": [{"hostPort": 82}]},
                    {"name": "proxy", "restartPolicy": "Always", "ports": [{"hostPort": 15001}]},
                ],
            },
            (("TCP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 15001)),
        ),
    ],
)
def test_host_ports_collect_what_the_pod_binds_on_its_node(
    spec: dict[str, Any], expected: tuple[tuple[str, str, int], ...]
) -> None:
    assert host_ports(spec) == tuple(HostPort(*port) for port in expected)


def test_a_parsed_pod_carries_its_host_ports() -> None:
    info = parse_pod(pod(containers_with_ports({"containerPort": 80, "hostPort": 80})))
    assert info.host_ports == (HostPort("TCP", "0.0.0.0", 80),)
    assert info.shape.host_ports == info.host_ports


@pytest.mark.parametrize(
    ("a", "b", "conflict"),
    [
        (HostPort("TCP", "0.0.0.0", 80), HostPort("TCP", "0.0.0.0", 80), True),
        (HostPort("TCP", "10.0.0.1", 80), HostPort("TCP", "10.0.0.1", 80), True),
        # Every address includes any one address, either way round.
        (HostPort("TCP", "0.0.0.0", 80), HostPort("TCP", "10.0.0.1", 80), True),
        (HostPort("TCP", "10.0.0.1", 80), HostPort("TCP", "0.0.0.0", 80), True),
        (HostPort("TCP", "10.0.0.1", 80), HostPort("TCP", "10.0.0.2", 80), False),
        (HostPort("TCP", "0.0.0.0", 80), HostPort("UDP", "0.0.0.0", 80), False),
        (HostPort("TCP", "0.0.0.0", 80), HostPort("TCP", "0.0.0.0", 81), False),
        (HostPort("SCTP", "10.0.0.1", 80), HostPort("SCTP", "0.0.0.0", 80), True),
        # Only 0.0.0.0 means every address, as in kube-scheduler.
        (HostPort("TCP", "::", 80), HostPort("TCP", "10.0.0.1", 80), False),
    ],
)
def test_ports_conflict_on_same_protocol_and_port_with_overlapping_addresses(
    a: HostPort, b: HostPort, conflict: bool
) -> None:
    assert ports_conflict(a, b) is conflict


def test_scheduling_gates_parse_to_their_names_in_order() -> None:
    info = parse_pod(
        pod({"containers": [], "schedulingGates": [{"name": "b.io/quota"}, {"name": "a.io/x"}]})
    )
    assert info.scheduling_gates == ("b.io/quota", "a.io/x")


@pytest.mark.parametrize(
    ("volumes", "expected"),
    [
        ([], ()),
        ([{"name": "tmp", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}], ()),
        ([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}], ("data",)),
        # A generic ephemeral volume's claim is named after the pod and the volume.
        ([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}], ("worker-0-scratch",)),
        (
            [
                {"name": "d", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "d2", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}},
            ],
            ("data", "worker-0-scratch", "logs"),
        ),
    ],
)
def test_pvc_names_list_each_claim_the_pod_mounts_once(
    volumes: list[dict[str, Any]], expected: tuple[str, ...]
) -> None:
    assert parse_pod(pod({"containers": [], "volumes": volumes})).pvc_names == expected


def test_a_parsed_pod_carries_affinity_spread_and_preferences() -> None:
    obj = pod(
        {
            "containers": [],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 30, "preference": {"matchExpressions": [ZONE_A]}}
                    ]
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "train"}},
                            "matchLabelKeys": ["job"],
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                },
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 2,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "train"}},
                    "matchLabelKeys": ["job"],
                }
            ],
        },
        labels={"app": "train", "job": "j1"},
    )
    info = parse_pod(obj)
    train_j1 = LabelSelector((("app", "train"),), (LabelSelectorRequirement("job", "In", ("j1",)),))
    assert info.preferred_affinity == (
        PreferredSchedulingTerm(
            30, NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("a",)),))
        ),
    )
    assert info.pod_affinity == PodAffinity(
        required_anti_affinity=(
            PodAffinityTerm(train_j1, frozenset(), None, "kubernetes.io/hostname"),
        )
    )
    assert info.spread_constraints == (
        TopologySpreadConstraint(2, "zone", "ScheduleAnyway", train_j1),
    )


def test_replicas_of_a_job_share_one_copy_of_their_constraints() -> None:
    spec = {
        "containers": [{"name": "c", "ports": [{"hostPort": 80}]}],
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        },
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    a = parse_pod(pod(copy.deepcopy(spec), name="worker-0"))
    b = parse_pod(pod(copy.deepcopy(spec), name="worker-1"))
    assert a.pod_affinity is not None
    assert a.pod_affinity is b.pod_affinity
    assert a.spread_constraints is b.spread_constraints
    assert a.host_ports is b.host_ports


def test_a_bound_pod_keeps_what_capacity_needs_and_not_its_tolerations() -> None:
    bound = copy.deepcopy(FULL_POD)
    bound["spec"]["nodeName"] = "node-7"
    info = parse_pod(bound)
    assert info.node_name == "node-7"
    assert info.requests == Resources({"cpu": 2000, "memory": 8589934592, GPU: 4})
    # Taints are matched only for a pod to be placed; a bound pod is never placed again.
    assert info.tolerations == ()
    assert parse_pod(FULL_POD).tolerations == (Toleration(GPU, "Exists", "", "NoSchedule"),)


@pytest.mark.parametrize(
    ("phase", "reason", "refusal"),
    [
        ("Failed", "OutOfcpu", "OutOfcpu"),
        ("Failed", "OutOfnvidia.com/gpu", "OutOfnvidia.com/gpu"),
        ("Failed", "UnexpectedAdmissionError", "UnexpectedAdmissionError"),
        ("Failed", "Evicted", ""),
        ("Failed", "", ""),
        ("Running", "OutOfcpu", ""),
    ],
)
def test_a_kubelet_admission_refusal_is_read_from_a_failed_pods_reason(
    phase: str, reason: str, refusal: str
) -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {"phase": phase, "reason": reason},
    }
    assert parse_pod(obj).admission_refusal == refusal
