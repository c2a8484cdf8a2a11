"""Every gang API, through the whole engine (fake API server, fake clock): a gang written in any
of them binds all or nothing, its pods are told why they wait, and its group object's status is
written back in that API's own terms."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from koordgang.model.koordinator import MIN_AVAILABLE_KEY, NAME_KEY, POD_GROUP_LABEL
from koordgang.model.pod import PodInfo
from koordgang.testing.api import FakeApi
from koordgang.testing.builders import NS, node, parse, pod, pod_json, uid_of
from koordgang.testing.clock import FakeClock
from koordgang.testing.harness import Harness, MakeScheduler

X_K8S = "podgroups.scheduling.x-k8s.io"
UPSTREAM = "podgroups.scheduling.k8s.io"
VOLCANO = "podgroups.scheduling.volcano.sh"


def group_object(
    api_version: str, name: str, spec: dict[str, Any], status: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": status or {},
    }


def x_k8s_member(name: str, group: str = "pg", cpu: str = "1") -> PodInfo:
    return pod(name, cpu=cpu, labels={"scheduling.x-k8s.io/pod-group": group})


def upstream_member(name: str, group: str = "pg", cpu: str = "1") -> PodInfo:
    obj = pod_json(name, cpu=cpu)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return parse(obj)


def volcano_member(name: str, group: str = "pg", task: str = "", cpu: str = "1") -> PodInfo:
    annotations = {"scheduling.k8s.io/group-name": group}
    if task:
        annotations["volcano.sh/task-spec"] = task
    return pod(name, cpu=cpu, annotations=annotations)


def status_patches(api: FakeApi, group_path: str, name: str) -> list[dict[str, Any]]:
    """Status written to a group object: through its status subresource, or (Volcano's,
    which has none) merged into the object."""
    path = f"/apis/{group_path}/namespaces/{NS}/podgroups/{name}"
    subresource = not group_path.startswith("scheduling.volcano.sh/")
    return [
        call.body["status"]
        for call in api.landed()
        if call.method == "PATCH" and call.path == (path + "/status" if subresource else path)
    ]


async def publish(sched: Harness, clock: FakeClock) -> None:
    """One loop tick: statuses are published once a second."""
    clock.advance(1.0)
    await sched.run()


# -- scheduler-plugins ----------------------------------------------------------------------


async def test_a_scheduler_plugins_gang_that_does_not_fit_binds_nothing_and_says_why(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(
        X_K8S, "ADDED", group_object("scheduling.x-k8s.io/v1alpha1", "pg", {"minMember": 4})
    )
    members = [x_k8s_member(f"w-{i}", cpu="2") for i in range(4)]
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()

    assert api.binds() == []
    for member in members:
        condition = api.condition(member.name)
        assert condition is not None and condition["status"] == "False"
        assert "gang ns/pg" in condition["message"], condition["message"]
    await publish(sched, clock)
    [*_, status] = status_patches(api, "scheduling.x-k8s.io/v1alpha1", "pg")
    assert status["phase"] == "Scheduling" and status["scheduled"] == 0


async def test_a_scheduler_plugins_gang_binds_whole_once_room_exists(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(
        X_K8S,
        "ADDED",
        group_object(
            "scheduling.x-k8s.io/v1alpha1", "pg", {"minMember": 4, "scheduleTimeoutSeconds": 0}
        ),
    )
    members = [x_k8s_member(f"w-{i}", cpu="2") for i in range(4)]
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()
    assert api.binds() == []

    sched.intake.on_node_upsert(node("n2", cpu="6"))
    clock.advance(30.0)
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == [f"w-{i}" for i in range(4)]
    sched.observe_binds()
    await publish(sched, clock)
    [*_, status] = status_patches(api, "scheduling.x-k8s.io/v1alpha1", "pg")
    assert status["phase"] == "Scheduled" and status["scheduled"] == 4


# -- upstream Kubernetes --------------------------------------------------------------------


def upstream_group(name: str, min_count: int | None, **status: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return group_object("scheduling.k8s.io/v1alpha2", name, {"schedulingPolicy": policy}, status)


async def test_an_upstream_gang_writes_podgroupscheduled_false_then_true_never_back(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(UPSTREAM, "ADDED", upstream_group("job-a", 4))
    members = [upstream_member(f"job-a-{i}", "job-a", cpu="2") for i in range(4)]
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()
    assert api.binds() == []
    await publish(sched, clock)
    [*_, waiting] = status_patches(api, "scheduling.k8s.io/v1alpha2", "job-a")
    [condition] = waiting["conditions"]
    assert condition["type"] == "PodGroupScheduled"
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert "gang ns/job-a" in condition["message"]
    # The informer shows what was written.
    sched.intake.on_object(UPSTREAM, "MODIFIED", upstream_group("job-a", 4, **waiting))

    sched.intake.on_node_upsert(node("n2", cpu="6"))
    clock.advance(30.0)
    await sched.run()
    assert len(api.binds()) == 4
    sched.observe_binds()
    await publish(sched, clock)
    [*_, scheduled] = status_patches(api, "scheduling.k8s.io/v1alpha2", "job-a")
    [condition] = scheduled["conditions"]
    assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
    sched.intake.on_object(UPSTREAM, "MODIFIED", upstream_group("job-a", 4, **scheduled))

    # A member fails: the gang is below its minimum, but the condition stays True.
    written = len(status_patches(api, "scheduling.k8s.io/v1alpha2", "job-a"))
    [first] = [p for p in sched.cache.pods() if p.name == "job-a-0"]
    sched.intake.on_pod_upsert(replace(first, phase="Failed", resource_version="9"))
    await publish(sched, clock)
    assert len(status_patches(api, "scheduling.k8s.io/v1alpha2", "job-a")) == written
    [event] = api.events("job-a", "GangBelowMinimum")
    assert event["involvedObject"]["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert "fell below its minimum: 3 of 4" in event["message"]


def beta_group(name: str, min_count: int, **status: Any) -> dict[str, Any]:
    """A PodGroup as Kubernetes 1.37 serves it (``v1beta1``)."""
    spec = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    return group_object("scheduling.k8s.io/v1beta1", name, spec, status)


async def test_a_v1beta1_gang_writes_podgroupinitiallyscheduled_in_v1beta1(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(UPSTREAM, "ADDED", beta_group("job-b", 3))
    members = [upstream_member(f"job-b-{i}", "job-b", cpu="2") for i in range(3)]
    sched.list(nodes=[node("n1", cpu="4")], pods=members)
    await sched.run()
    assert api.binds() == []
    await publish(sched, clock)
    assert status_patches(api, "scheduling.k8s.io/v1alpha2", "job-b") == []
    [*_, waiting] = status_patches(api, "scheduling.k8s.io/v1beta1", "job-b")
    [condition] = waiting["conditions"]
    assert condition["type"] == "PodGroupInitiallyScheduled"
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    sched.intake.on_object(UPSTREAM, "MODIFIED", beta_group("job-b", 3, **waiting))

    sched.intake.on_node_upsert(node("n2", cpu="4"))
    clock.advance(30.0)
    await sched.run()
    assert len(api.binds()) == 3
    sched.observe_binds()
    await publish(sched, clock)
    [*_, scheduled] = status_patches(api, "scheduling.k8s.io/v1beta1", "job-b")
    [condition] = scheduled["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
    )


async def test_a_lowered_min_count_is_taken_up_by_a_gang_not_yet_placed(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(UPSTREAM, "ADDED", beta_group("job-c", 4))
    members = [upstream_member(f"job-c-{i}", "job-c", cpu="2") for i in range(4)]
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()
    assert api.binds() == []
    # minCount is mutable in v1beta1: 3 of the 4 fit, and 3 is now enough.
    changed = beta_group("job-c", 3)
    changed["metadata"]["resourceVersion"] = "2"
    sched.intake.on_object(UPSTREAM, "MODIFIED", changed)
    clock.advance(30.0)
    await sched.run()
    assert len(api.binds()) == 3


async def test_upstream_pods_whose_podgroup_is_missing_wait_and_say_so(
    sched: Harness, api: FakeApi
) -> None:
    members = [upstream_member(f"j-{i}", "missing") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("j-0")
    assert condition is not None
    assert "waiting for PodGroup ns/missing (kubernetes" in condition["message"]
    assert "spec.schedulingGroup.podGroupName" in condition["message"]


async def test_an_upstream_basic_podgroup_is_no_gang_its_pods_go_alone(
    sched: Harness, api: FakeApi
) -> None:
    sched.intake.on_object(UPSTREAM, "ADDED", upstream_group("svc", None))
    members = [upstream_member(f"s-{i}", "svc", cpu="2") for i in range(4)]
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()
    assert len(api.binds()) == 3


# -- Volcano --------------------------------------------------------------------------------


async def test_a_volcano_podgroup_is_enqueued_only_when_its_min_resources_fit(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    spec = {"minMember": 2, "minResources": {"cpu": "8"}, "queue": "research"}
    sched.list(nodes=[node("n1", cpu="6")], pods=[])
    sched.intake.on_object(
        VOLCANO, "ADDED", group_object("scheduling.volcano.sh/v1beta1", "pg", spec)
    )
    await publish(sched, clock)
    [*_, pending] = status_patches(api, "scheduling.volcano.sh/v1beta1", "pg")
    assert pending["phase"] == "Pending"
    assert "needs 8 cpu, more than is free" in pending["conditions"][0]["message"]
    [told] = api.events("pg", "FieldIgnored")
    assert told["type"] == "Normal" and 'spec.queue="research"' in told["message"]

    sched.intake.on_node_upsert(node("n2", cpu="6"))
    await publish(sched, clock)
    [*_, inqueue] = status_patches(api, "scheduling.volcano.sh/v1beta1", "pg")
    assert inqueue["phase"] == "Inqueue"

    # Its client makes the pods now; they bind whole, and the gang runs.
    members = [volcano_member(f"v-{i}", cpu="4") for i in range(2)]
    sched.add(*members)
    await sched.run()
    assert len(api.binds()) == 2
    sched.observe_binds()
    await publish(sched, clock)
    [*_, running] = status_patches(api, "scheduling.volcano.sh/v1beta1", "pg")
    assert running["phase"] == "Running"
    # The queue is mentioned once, not at every update of the object.
    sched.intake.on_object(
        VOLCANO, "MODIFIED", group_object("scheduling.volcano.sh/v1beta1", "pg", spec, running)
    )
    await sched.run()
    assert len(api.events("pg", "FieldIgnored")) == 1


async def test_volcano_task_minimums_must_be_met_as_well_as_the_gang_minimum(
    sched: Harness, api: FakeApi
) -> None:
    spec = {"minMember": 3, "minTaskMember": {"ps": 1, "worker": 2}}
    sched.intake.on_object(
        VOLCANO, "ADDED", group_object("scheduling.volcano.sh/v1beta1", "pg", spec)
    )
    # Three workers and no ps: the gang minimum is met, the ps task's is not.
    members = [volcano_member(f"worker-{i}", task="worker") for i in range(3)]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("worker-0")
    assert condition is not None
    assert "task ps has 0/1 members created (spec.minTaskMember[ps]=1" in condition["message"]

    sched.add(volcano_member("ps-0", task="ps"))
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == ["ps-0", "worker-0", "worker-1", "worker-2"]


async def test_a_volcano_task_that_cannot_reach_its_minimum_keeps_the_gang_whole(
    sched: Harness, api: FakeApi
) -> None:
    spec = {"minMember": 2, "minTaskMember": {"ps": 1, "worker": 1}}
    sched.intake.on_object(
        VOLCANO, "ADDED", group_object("scheduling.volcano.sh/v1beta1", "pg", spec)
    )
    members = [
        volcano_member("ps-0", task="ps", cpu="16"),  # fits nowhere
        volcano_member("worker-0", task="worker"),
        volcano_member("worker-1", task="worker"),
    ]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    assert api.binds() == []


# -- Kueue ----------------------------------------------------------------------------------


def kueue_member(name: str, total: str = "3", gated: bool = False) -> PodInfo:
    return pod(
        name,
        labels={"kueue.x-k8s.io/pod-group-name": "grp"},
        annotations={"kueue.x-k8s.io/pod-group-total-count": total},
        gates=("kueue.x-k8s.io/admission",) if gated else (),
    )


async def test_a_kueue_pod_group_binds_whole_once_admitted(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    gated = [kueue_member(f"k-{i}", gated=True) for i in range(3)]
    sched.list(nodes=[node("n1", cpu="8")], pods=gated)
    await sched.run()
    assert api.binds() == []

    # Kueue admits two of three first: still nothing binds.
    sched.add(*[kueue_member(f"k-{i}") for i in range(2)])
    clock.advance(30.0)
    await sched.run()
    assert api.binds() == []
    sched.add(kueue_member("k-2"))
    clock.advance(30.0)
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == ["k-0", "k-1", "k-2"]


async def test_a_kueue_group_without_a_total_count_cannot_start_and_says_which_key(
    sched: Harness, api: FakeApi
) -> None:
    member = pod("k-0", labels={"kueue.x-k8s.io/pod-group-name": "grp"})
    sched.list(nodes=[node("n1", cpu="8")], pods=[member])
    await sched.run()
    assert api.binds() == []
    condition = api.condition("k-0")
    assert condition is not None
    assert 'kueue.x-k8s.io/pod-group-total-count="" is missing' in condition["message"]


# -- across APIs ----------------------------------------------------------------------------


async def test_a_pod_naming_gangs_in_two_apis_belongs_to_the_first_and_is_warned(
    sched: Harness, api: FakeApi
) -> None:
    member = pod(
        "p-0",
        labels={"scheduling.x-k8s.io/pod-group": "other"},
        annotations={NAME_KEY: "mine", MIN_AVAILABLE_KEY: "1"},
    )
    sched.list(nodes=[node("n1", cpu="8")], pods=[member])
    await sched.run()
    # Koordinator comes first: its gang of one binds, the scheduler-plugins PodGroup (which
    # does not exist) is not waited for.
    assert api.binds() == [("p-0", "n1")]
    [event] = api.events("p-0", "GangApiConflict")
    assert "ns/mine (koordinator)" in event["message"]
    assert "ns/other (scheduler-plugins)" in event["message"]


async def test_bad_group_objects_are_explained_on_the_object_and_the_pods(
    make_scheduler: MakeScheduler, api: FakeApi
) -> None:
    sched = make_scheduler()
    sched.intake.on_object(
        UPSTREAM,
        "ADDED",
        upstream_group("zero", 1) | {"spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}},
    )
    sched.intake.on_object(
        X_K8S, "ADDED", group_object("scheduling.x-k8s.io/v1alpha1", "neg", {"minMember": -2})
    )
    members = [
        upstream_member("z-0", "zero"),
        x_k8s_member("n-0", "neg"),
        x_k8s_member("o-0", "other-ns/pg"),
    ]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    assert api.binds() == []
    [bad_zero] = api.events("zero", "InvalidGangConfig")
    assert "spec.schedulingPolicy.gang.minCount" in bad_zero["message"]
    [bad_neg] = api.events("neg", "InvalidGangConfig")
    assert 'spec.minMember="-2" is less than 1' in bad_neg["message"]
    for name, says in (
        ("z-0", "spec.schedulingPolicy.gang.minCount"),
        ("n-0", 'spec.minMember="-2" is less than 1'),
        ("o-0", "a gang's group object is in the pod's own namespace"),
    ):
        condition = api.condition(name)
        assert condition is not None and says in condition["message"], (name, condition)


async def test_a_deleted_group_object_leaves_its_pending_members_waiting_for_it(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    obj = group_object("scheduling.x-k8s.io/v1alpha1", "pg", {"minMember": 2})
    sched.intake.on_object(X_K8S, "ADDED", obj)
    sched.intake.on_object(X_K8S, "DELETED", obj)
    members = [x_k8s_member(f"w-{i}") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("w-0")
    assert (
        condition is not None
        and "waiting for PodGroup ns/pg (scheduler-plugins" in (condition["message"])
    )


async def test_a_status_only_update_of_a_group_object_moves_no_pod_and_repeats_no_warning(
    sched: Harness, api: FakeApi
) -> None:
    spec = {"minMember": -1}
    obj = group_object("scheduling.x-k8s.io/v1alpha1", "pg", spec)
    sched.list(nodes=[node("n1", cpu="8")], pods=[])
    assert sched.framework.on_object(X_K8S, "ADDED", obj) is True
    updated = group_object("scheduling.x-k8s.io/v1alpha1", "pg", spec, {"phase": "Pending"})
    updated["metadata"]["resourceVersion"] = "2"
    assert sched.framework.on_object(X_K8S, "MODIFIED", updated) is False
    await sched.run()
    assert len(api.events("pg", "InvalidGangConfig")) == 1


async def test_a_placed_volcano_gang_drops_its_unschedulable_condition(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(
        VOLCANO, "ADDED", group_object("scheduling.volcano.sh/v1beta1", "pg", {"minMember": 2})
    )
    members = [volcano_member(f"v-{i}", cpu="4") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()
    await publish(sched, clock)
    [*_, waiting] = status_patches(api, "scheduling.volcano.sh/v1beta1", "pg")
    assert [c["type"] for c in waiting["conditions"]] == ["Unschedulable"]

    sched.intake.on_node_upsert(node("n2", cpu="6"))
    clock.advance(30.0)
    await sched.run()
    sched.observe_binds()
    await publish(sched, clock)
    [*_, placed] = status_patches(api, "scheduling.volcano.sh/v1beta1", "pg")
    assert [c["type"] for c in placed["conditions"]] == ["Scheduled"]


# -- what a review found ----------------------------------------------------------------------


async def test_the_pods_min_available_overrides_a_podgroup_seen_before_them(
    sched: Harness, api: FakeApi
) -> None:
    # After a restart the group objects are read before the pods.
    sched.intake.on_object(
        "podgroups.scheduling.sigs.k8s.io",
        "ADDED",
        group_object("scheduling.sigs.k8s.io/v1alpha1", "pg", {"minMember": 2}),
    )
    members = [
        pod(f"w-{i}", labels={POD_GROUP_LABEL: "pg"}, annotations={MIN_AVAILABLE_KEY: "3"})
        for i in range(2)
    ]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    assert api.binds() == []
    condition = api.condition("w-0")
    assert condition is not None and "2/3 members created, min 3" in condition["message"]


async def test_a_big_task_does_not_take_the_room_a_small_task_needs(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    spec = {"minMember": 2, "minTaskMember": {"alpha": 1, "beta": 1}}
    sched.intake.on_object(
        VOLCANO, "ADDED", group_object("scheduling.volcano.sh/v1beta1", "pg", spec)
    )
    members = [volcano_member(f"a-{i}", task="alpha", cpu="2") for i in range(3)]
    members.append(volcano_member("b-0", task="beta", cpu="2"))
    sched.list(nodes=[node("n1", cpu="6")], pods=members)
    await sched.run()
    bound_names = {name for name, _ in api.binds()}
    assert "b-0" in bound_names and len(bound_names) == 3, bound_names


async def test_preemption_makes_room_for_every_task_minimum(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    spec = {"minMember": 2, "minTaskMember": {"a": 1, "b": 2}}
    sched.intake.on_object(
        VOLCANO, "ADDED", group_object("scheduling.volcano.sh/v1beta1", "pg", spec)
    )

    def member(name: str, task: str) -> PodInfo:
        annotations = {"scheduling.k8s.io/group-name": "pg", "volcano.sh/task-spec": task}
        return parse(pod_json(name, cpu="2", priority=100, annotations=annotations))

    members = [member("a-0", "a"), member("b-0", "b"), member("b-1", "b")]
    running = [
        parse(pod_json(f"low-{i}", cpu="2", priority=0, node_name="n1", phase="Running"))
        for i in range(3)
    ]
    sched.list(nodes=[node("n1", cpu="6")], pods=running + members)
    for _ in range(4):
        await sched.run()
        for call in api.landed():
            if call.method == "DELETE" and "/pods/low-" in call.path:
                sched.intake.on_pod_delete(uid_of(call.path.rsplit("/", 1)[1]))
        sched.observe_binds()
        clock.advance(70)
    assert sorted(name for name, _ in api.binds()) == ["a-0", "b-0", "b-1"]


async def test_cleaning_up_a_finished_job_is_no_fall_below_its_minimum(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(
        X_K8S, "ADDED", group_object("scheduling.x-k8s.io/v1alpha1", "pg", {"minMember": 2})
    )
    members = [x_k8s_member(f"w-{i}") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="8")], pods=members)
    await sched.run()
    sched.observe_binds()
    for info in list(sched.cache.pods()):
        sched.intake.on_pod_upsert(replace(info, phase="Succeeded", resource_version="5"))
    sched.intake.on_pod_delete(uid_of("w-0"))
    await publish(sched, clock)
    assert api.events("pg", "GangBelowMinimum") == []
    [*_, status] = status_patches(api, "scheduling.x-k8s.io/v1alpha1", "pg")
    assert status["phase"] == "Finished"


async def test_members_that_came_before_their_podgroup_hear_of_its_mistakes_when_it_comes(
    sched: Harness, api: FakeApi
) -> None:
    # The pods' watch runs ahead of the PodGroups' (two watches): the members are listed
    # first, waiting for their PodGroup; it then comes with a mode that does not exist.
    members = [x_k8s_member(f"w-{i}") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="4")], pods=members)
    await sched.run()
    assert not api.events("w-0", "InvalidGangConfig")
    group = group_object("scheduling.x-k8s.io/v1alpha1", "pg", {"minMember": 2})
    group["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/mode": "Sloppy"}
    sched.intake.on_object(X_K8S, "ADDED", group)
    await sched.run()
    for member in members:
        [event] = api.events(member.name, "InvalidGangConfig")
        assert "Sloppy" in event["message"], event["message"]


async def test_what_a_deleted_podgroup_was_told_is_forgotten(sched: Harness, api: FakeApi) -> None:
    # A PodGroup told something (a field the scheduler ignores), then deleted: the reporter
    # keeps nothing of it (jobs come and go for hours; this memory must not grow with every
    # PodGroup there ever was).
    group = group_object("scheduling.volcano.sh/v1beta1", "pg", {"minMember": 2, "queue": "q"})
    sched.list(nodes=[node("n1", cpu="4")])
    sched.intake.on_object(VOLCANO, "ADDED", group)
    await sched.run()
    assert api.events("pg", "FieldIgnored")
    reporter = sched.scheduler.reporter
    assert "uid-pg" in reporter._last
    sched.intake.on_object(VOLCANO, "DELETED", group)
    assert "uid-pg" not in reporter._last


# -- upstream's group policy: priority, preemption policy --------------------------------------


def policy_group(name: str, min_count: int, **spec: Any) -> dict[str, Any]:
    body = {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec}
    obj = group_object("scheduling.k8s.io/v1beta1", name, body)
    obj["metadata"]["creationTimestamp"] = spec.pop("created", "2024-01-01T00:00:00Z")
    return obj


async def test_the_podgroup_priority_orders_gangs_over_their_pods_priority(
    sched: Harness, api: FakeApi
) -> None:
    # "early" is older and its pods' priority higher; "urgent"'s PodGroup outranks it.
    sched.intake.on_object(UPSTREAM, "ADDED", policy_group("early", 2, priority=10))
    late = policy_group("urgent", 2, priority=1000)
    late["metadata"]["creationTimestamp"] = "2024-06-01T00:00:00Z"
    sched.intake.on_object(UPSTREAM, "ADDED", late)
    pods = []
    for group, priority in (("early", 500), ("urgent", 0)):
        for i in range(2):
            obj = pod_json(f"{group}-{i}", cpu="2", priority=priority)
            obj["spec"]["schedulingGroup"] = {"podGroupName": group}
            pods.append(parse(obj))
    sched.list(nodes=[node("n1", cpu="4")], pods=pods)
    await sched.run()
    assert sorted(name for name, _ in api.binds()) == ["urgent-0", "urgent-1"]


async def test_a_podgroup_that_never_preempts_evicts_nobody_and_says_so(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(
        UPSTREAM, "ADDED", policy_group("polite", 2, priority=1000, preemptionPolicy="Never")
    )
    members = []
    for i in range(2):
        obj = pod_json(f"polite-{i}", cpu="2", priority=1000)
        obj["spec"]["schedulingGroup"] = {"podGroupName": "polite"}
        members.append(parse(obj))
    running = [
        parse(pod_json(f"low-{i}", cpu="2", priority=0, node_name="n1", phase="Running"))
        for i in range(2)
    ]
    sched.list(nodes=[node("n1", cpu="4")], pods=running + members)
    await sched.run()
    clock.advance(5)
    await sched.run()
    assert [c for c in api.landed() if c.method == "DELETE"] == []
    assert api.binds() == []
    condition = api.condition("polite-0")
    assert condition is not None and "preemptionPolicy is Never" in condition["message"]


async def evictions_for(
    sched: Harness, api: FakeApi, clock: FakeClock, mode: dict[str, Any], priorities: list[int]
) -> list[str]:
    """A running upstream gang of two (one pod per node, ``priorities``) in disruption
    ``mode``, and a pod of priority 1000 that needs one node: which pods are evicted."""
    sched.intake.on_object(UPSTREAM, "ADDED", policy_group("victim", 2, disruptionMode=mode))
    running = []
    for i, priority in enumerate(priorities):
        obj = pod_json(
            f"victim-{i}", cpu="2", priority=priority, node_name=f"n{i}", phase="Running"
        )
        obj["spec"]["schedulingGroup"] = {"podGroupName": "victim"}
        running.append(parse(obj))
    urgent = parse(pod_json("urgent", cpu="2", priority=1000))
    sched.list(nodes=[node("n0", cpu="2"), node("n1", cpu="2")], pods=[*running, urgent])
    await sched.run()
    clock.advance(1)
    await sched.run()
    return sorted(
        call.path.rsplit("/", 1)[1]
        for call in api.landed()
        if call.method == "DELETE" and "/pods/victim-" in call.path
    )


async def test_a_victim_podgroup_disrupted_all_is_evicted_whole(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    assert await evictions_for(sched, api, clock, {"all": {}}, [0, 0]) == [
        "victim-0",
        "victim-1",
    ]


async def test_a_victim_podgroup_disrupted_one_at_a_time_loses_one_pod(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    assert len(await evictions_for(sched, api, clock, {"single": {}}, [0, 0])) == 1


async def test_a_victim_podgroup_disrupted_all_with_a_member_out_of_reach_is_not_touched(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    # victim-1's priority is not below the preemptor's: the PodGroup cannot go whole.
    assert await evictions_for(sched, api, clock, {"all": {}}, [0, 1000]) == []


async def test_a_preempted_podgroup_says_so_in_its_disruption_target_condition(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    evicted = await evictions_for(sched, api, clock, {"all": {}}, [0, 0])
    assert evicted
    # The informer shows the victims marked (their DisruptionTarget condition).
    for info in [p for p in sched.cache.pods() if p.name in evicted]:
        sched.intake.on_pod_upsert(replace(info, preempted_by="ns/urgent", resource_version="7"))
    await publish(sched, clock)
    [*_, status] = status_patches(api, "scheduling.k8s.io/v1beta1", "victim")
    [target] = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert "ns/urgent" in target["message"]


async def test_a_member_the_kubelet_refused_is_said_in_the_podgroups_disruption_target(
    sched: Harness, api: FakeApi, clock: FakeClock
) -> None:
    sched.intake.on_object(UPSTREAM, "ADDED", policy_group("train", 2))
    members = [upstream_member(f"train-{i}", group="train") for i in range(2)]
    sched.list(nodes=[node("n1", cpu="4")], pods=members)
    await sched.run()
    assert sorted(api.binds()) == [("train-0", "n1"), ("train-1", "n1")]
    sched.observe_binds()
    [placed] = [p for p in sched.cache.pods() if p.name == "train-1"]
    sched.add(replace(placed, phase="Failed", failure_reason="OutOfcpu", resource_version="9"))
    await sched.run()
    await publish(sched, clock)
    [*_, status] = status_patches(api, "scheduling.k8s.io/v1beta1", "train")
    [target] = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "AdmissionRefused")
    assert "the kubelet refused member train-1 on node n1: OutOfcpu" in target["message"]
