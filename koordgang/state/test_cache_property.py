"""Random event sequences against SchedulerCache, checked after every step against a model.

The model is the rule stated in plain terms: a pod that is known and not terminal counts on the
node its spec names, or else on the node this scheduler assumed it on, and nowhere otherwise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.cache import SchedulerCache

NODE_NAMES = ("n1", "n2", "n3", "n4")
POD_NAMES = tuple(f"p{i}" for i in range(8))
PHASES = ("Pending", "Running", "Running", "Unknown", "Succeeded", "Failed")
CPUS = (None, "0", "100m", "250m", "1", "1500m")
MEMORIES = (None, "64Mi", "1Gi")
STEPS = 300


def node(name: str, cpu: str, resource_version: int) -> NodeInfo:
    return parse_node(
        {
            "metadata": {"name": name, "resourceVersion": str(resource_version)},
            "spec": {},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def pod(
    name: str, *, node_name: str, phase: str, cpu: str | None, memory: str | None, gpu: int
) -> PodInfo:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": "prop", "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": phase},
        }
    )


@dataclass
class Model:
    pods: dict[str, PodInfo] = field(default_factory=dict)
    assumed: dict[str, str] = field(default_factory=dict)
    nodes: set[str] = field(default_factory=set)

    def upsert_pod(self, p: PodInfo) -> None:
        self.pods[p.uid] = p
        if p.node_name:
            self.assumed.pop(p.uid, None)

    def remove_pod(self, uid: str) -> None:
        self.pods.pop(uid, None)
        self.assumed.pop(uid, None)

    def assume(self, p: PodInfo, node_name: str) -> None:
        self.pods.setdefault(p.uid, p)
        self.assumed[p.uid] = node_name

    def location(self, uid: str) -> str | None:
        p = self.pods.get(uid)
        if p is None or p.phase in ("Succeeded", "Failed"):
            return None
        return p.node_name or self.assumed.get(uid)

    def expected(self) -> dict[str, tuple[dict[str, int], set[str]]]:
        """node -> (requested sum, uids counted there)."""
        result: dict[str, tuple[dict[str, int], set[str]]] = {}
        for uid, p in self.pods.items():
            where = self.location(uid)
            if where is None:
                continue
            total, uids = result.setdefault(where, ({}, set()))
            uids.add(uid)
            for name, amount in p.requests.items():
                total[name] = total.get(name, 0) + amount
        return result


class Driver:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.cache = SchedulerCache()
        self.model = Model()
        self.version = 0
        self.log: list[str] = []
        #: Per node name: (requested, counted uids) after the previous step, and where the
        #: change log stood then.
        self.usage = self.usage_now()
        self.position = self.cache.change_position

    def usage_now(self) -> dict[str, tuple[dict[str, int], frozenset[str]]]:
        """What counts on each node (nothing on a node that is not there)."""
        usage: dict[str, tuple[dict[str, int], frozenset[str]]] = {}
        for name in NODE_NAMES:
            state = self.cache.node(name)
            usage[name] = (
                ({}, frozenset())
                if state is None
                else (
                    dict(state.requested),
                    frozenset(state.pods),
                )
            )
        return usage

    def random_pod(self, name: str | None = None, *, bound: bool | None = None) -> PodInfo:
        rng = self.rng
        if bound is None:
            bound = rng.random() < 0.5
        return pod(
            name or rng.choice(POD_NAMES),
            node_name=rng.choice(NODE_NAMES) if bound else "",
            phase=rng.choice(PHASES),
            cpu=rng.choice(CPUS),
            memory=rng.choice(MEMORIES),
            gpu=rng.choice((0, 0, 0, 1, 2)),
        )

    def random_node(self, name: str | None = None) -> NodeInfo:
        self.version += 1
        return node(name or self.rng.choice(NODE_NAMES), self.rng.choice(("4", "8")), self.version)

    def step(self) -> None:
        rng, cache, model = self.rng, self.cache, self.model
        action = rng.choice(
            (
                "add_node",
                "delete_node",
                "add_pod",
                "update_pod",
                "bind",
                "assume",
                "assume",
                "forget",
                "delete_pod",
                "terminate",
                "relist_pods",
                "relist_nodes",
            )
        )
        uid = f"uid-{rng.choice(POD_NAMES)}"
        known = model.pods.get(uid)
        self.log.append(f"{action} {uid}")
        if action == "add_node":
            info = self.random_node()
            cache.upsert_node(info)
            model.nodes.add(info.name)
        elif action == "delete_node":
            name = rng.choice(NODE_NAMES)
            cache.remove_node(name)
            model.nodes.discard(name)
        elif action == "add_pod" or (action == "update_pod" and known is None):
            p = self.random_pod(uid.removeprefix("uid-"), bound=False)
            cache.upsert_pod(p)
            model.upsert_pod(p)
        elif action == "update_pod":
            assert known is not None
            # A status-only change, or a new version with other requests (in-place resize).
            p = self.random_pod(known.name, bound=bool(known.node_name))
            if known.node_name:
                p = pod(
                    known.name,
                    node_name=known.node_name,
                    phase=p.phase,
                    cpu=rng.choice(CPUS),
                    memory=rng.choice(MEMORIES),
                    gpu=0,
                )
            cache.upsert_pod(p)
            model.upsert_pod(p)
        elif action == "bind":
            p = self.random_pod(uid.removeprefix("uid-"), bound=True)
            if known is not None and not known.node_name and rng.random() < 0.7:
                # Usually bound where it was assumed.
                assumed = model.assumed.get(uid)
                if assumed is not None:
                    p = pod(
                        known.name,
                        node_name=assumed,
                        phase="Running",
                        cpu=rng.choice(CPUS),
                        memory=None,
                        gpu=0,
                    )
            cache.upsert_pod(p)
            model.upsert_pod(p)
        elif action == "assume":
            p = known if known is not None else self.random_pod(uid.removeprefix("uid-"))
            target = rng.choice(NODE_NAMES)
            cache.assume(p, target)
            model.assume(p, target)
        elif action == "forget":
            cache.forget(uid)
            model.assumed.pop(uid, None)
        elif action == "delete_pod":
            cache.remove_pod(uid)
            model.remove_pod(uid)
        elif action == "terminate":
            if known is not None:
                p = pod(
                    known.name,
                    node_name=known.node_name,
                    phase=rng.choice(("Succeeded", "Failed")),
                    cpu="1",
                    memory=None,
                    gpu=0,
                )
                cache.upsert_pod(p)
                model.upsert_pod(p)
        elif action == "relist_pods":
            listed = [p for p in model.pods.values() if rng.random() < 0.8]
            if listed and rng.random() < 0.5:
                changed = self.random_pod(listed[0].name)
                listed[0] = changed
            cache.replace_pods(listed)
            listed_uids = {p.uid for p in listed}
            for p in listed:
                model.upsert_pod(p)
            for gone in [u for u in model.pods if u not in listed_uids]:
                model.remove_pod(gone)
        elif action == "relist_nodes":
            names = [n for n in NODE_NAMES if rng.random() < 0.6]
            cache.replace_nodes([self.random_node(n) for n in names])
            model.nodes = set(names)
        else:  # pragma: no cover - the tuple above is exhaustive
            raise AssertionError(action)

    def check(self) -> None:
        cache, model = self.cache, self.model
        where = "\n".join(self.log[-10:])
        expected = model.expected()
        assert [s.name for s in cache.nodes()] == sorted(model.nodes), where
        for name in NODE_NAMES:
            requested, uids = expected.get(name, ({}, set()))
            state = cache.node(name)
            if state is None:
                assert name not in model.nodes and not uids, where
                continue
            assert state.requested == requested, f"{name}\n{where}"
            assert state.pods == uids, f"{name}\n{where}"
            assert state.pod_count == len(uids), f"{name}\n{where}"
            assert (state.info is not None) is (name in model.nodes), f"{name}\n{where}"
        for uid in (f"uid-{n}" for n in POD_NAMES):
            assert cache.node_of(uid) == model.location(uid), f"{uid}\n{where}"
            assert (cache.pod(uid) is not None) is (uid in model.pods), f"{uid}\n{where}"
        assert cache.pod_count() == len(model.pods), where
        # Nothing is counted on a node name nobody refers to: every counted pod is on one of
        # NODE_NAMES, whose states hold exactly the pods the model puts there.
        counted = sum(1 for uid in model.pods if model.location(uid) is not None)
        assert sum(s.pod_count for n in NODE_NAMES if (s := cache.node(n))) == counted, where
        # The namespace index holds every known pod, bound or not; the pods here have no pod
        # affinity, so that index stays empty.
        assert {p.uid for p in cache.pods_in_namespace("prop")} == set(model.pods), where
        assert list(cache.namespaces()) == (["prop"] if model.pods else []), where
        assert list(cache.pods_with_pod_affinity()) == [], where
        # Every node whose usage changed in this step is named in the change log since the
        # previous one (indexes of best nodes rely on it), and the log only grows.
        usage = self.usage_now()
        changes = cache.changes_since(self.position)
        assert changes is not None, where
        for name in NODE_NAMES:
            if usage[name] != self.usage[name]:
                assert name in changes, f"{name}\n{where}"
        assert cache.change_position >= self.position, where
        self.usage, self.position = usage, cache.change_position


@pytest.mark.parametrize("seed", [1, 2, 3, 17, 2024])
def test_every_node_counts_exactly_the_pods_bound_or_assumed_there_after_every_step(
    seed: int,
) -> None:
    driver = Driver(seed)
    for _ in range(STEPS):
        driver.step()
        driver.check()
    # The sequence exercised every kind of event, so the test is not vacuous.
    assert {entry.split()[0] for entry in driver.log} >= {
        "add_node",
        "delete_node",
        "add_pod",
        "update_pod",
        "bind",
        "assume",
        "forget",
        "delete_pod",
        "terminate",
        "relist_pods",
        "relist_nodes",
    }


@pytest.mark.parametrize("seed", [5, 6])
def test_releasing_everything_leaves_every_node_empty(seed: int) -> None:
    driver = Driver(seed)
    for _ in range(STEPS):
        driver.step()
    for uid in list(driver.model.pods):
        driver.cache.forget(uid)
        driver.cache.remove_pod(uid)
    states = [s for name in NODE_NAMES if (s := driver.cache.node(name)) is not None]
    assert [s.name for s in states] == sorted(driver.model.nodes)
    for state in states:
        assert state.requested == {}
        assert state.pod_count == 0
        assert state.ports == {}
        assert state.info is not None  # placeholders went with their last pod
