"""Malformed gang declarations: each is explained (Warning Event InvalidGangConfig naming the key
and value; PodScheduled=False naming the key when the gang cannot start), bad optional values
fall back to their defaults, and the scheduler keeps scheduling everything else."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import pytest
from kubernetes.client.exceptions import ApiException

from harness.daemon import Daemon
from harness.gangs import (
    GROUPS,
    LITE_MIN,
    MATCH_POLICY,
    MIN_AVAILABLE,
    MODE,
    PG_GROUP,
    PG_PLURAL,
    PG_VERSION,
    TOTAL_NUMBER,
    WAITING_TIME,
    Gang,
    GangBook,
    Way,
    bound_count,
    explanation,
    holds,
    matching_events,
    mentions,
    options,
    podgroup_body,
    wait_bound,
    wait_explained,
)
from harness.kube import Cluster, pod_body, scheduled_condition, wait_until

REASON = "InvalidGangConfig"


def _reported(
    cluster: Cluster, gang: Gang, key: str, value: str | None, extra: Iterable[str] = ()
) -> list[str]:
    """Messages of InvalidGangConfig Warnings naming ``key`` (and ``value``) on the gang's pods
    or on the objects named in ``extra`` (its PodGroup)."""
    names = [*gang.pod_names(), *extra]
    return [
        e.message
        for e in matching_events(cluster, gang.namespace, names, REASON)
        if e.type == "Warning" and mentions(e.message or "", key, value)
    ]


def test_a_podgroup_with_negative_min_member_is_refused_by_the_api_server(
    cluster: Cluster, namespace: str
) -> None:
    with pytest.raises(ApiException) as refused:
        cluster.custom.create_namespaced_custom_object(
            PG_GROUP, PG_VERSION, namespace, PG_PLURAL, podgroup_body("negative", -1)
        )
    assert refused.value.status == 422
    assert "minMember" in str(refused.value.body)


BAD_MINIMUMS: list[str | None] = ["abc", "-1", "0", "99999999", None]


def test_a_bad_min_available_is_reported_and_the_gang_never_starts(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["fatal-1"], {"cpu": "8", "memory": "16Gi"})
    broken = [
        gang_book.gang(
            f"fatal-{i}", 2, min_text=text, omit_min=text is None, requests={"cpu": "100m"}
        )
        for i, text in enumerate(BAD_MINIMUMS)
    ]
    good = gang_book.gang("fine", 2, requests={"cpu": "100m"})
    for gang in [*broken, good]:
        gang_book.create(gang)

    for gang, text in zip(broken, BAD_MINIMUMS, strict=True):
        wait_explained(cluster, namespace, gang.pod_names(), MIN_AVAILABLE)
        for name in gang.pod_names():
            condition = scheduled_condition(cluster.pod(namespace, name))
            assert condition is not None and condition.reason == "Unschedulable"
        wait_until(
            partial(_reported, cluster, gang, MIN_AVAILABLE, text),
            timeout=30,
            what=f"an {REASON} Warning naming {MIN_AVAILABLE}={text!r} for {gang.key}",
        )
    wait_bound(cluster, good, 2)
    holds(
        lambda: all(bound_count(cluster, g) == 0 for g in broken),
        3,
        what="no gang with a bad min-available bound, though there is room",
    )


def test_mode_sloppy_is_reported_and_falls_back_to_strict(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    cluster = clean_nodes
    cluster.add_nodes(["sloppy-1"], {"cpu": "2", "memory": "16Gi"})
    gang = gang_book.gang("sloppy", 3, options=options(mode="Sloppy"), requests={"cpu": "1"})
    names = gang_book.create(gang)
    messages = wait_until(
        lambda: _reported(cluster, gang, MODE, "Sloppy"),
        timeout=30,
        what=f'an {REASON} Warning naming {MODE}="Sloppy"',
    )
    assert any(f'{MODE}="Sloppy"' in m for m in messages)

    # Still a gang (room for 2 of 3: nothing bound), and Strict: it holds no room.
    wait_explained(cluster, namespace, names, "2/3 members placed, min 3")
    cluster.create_pod(namespace, pod_body("plain", requests={"cpu": "1"}))
    wait_until(
        lambda: cluster.pod(namespace, "plain").spec.node_name,
        timeout=30,
        what="a plain pod bound into the room the gang tried",
    )
    assert bound_count(cluster, gang) == 0

    # With room, it binds.
    cluster.add_nodes(["sloppy-2"], {"cpu": "2", "memory": "16Gi"})
    wait_bound(cluster, gang, 3)


@dataclass(frozen=True)
class Case:
    """One malformed declaration: ``key`` set to ``value`` (None: left out)."""

    key: str
    value: str | None
    way: Way = "annotations"

    @property
    def fatal(self) -> bool:
        return self.key in (MIN_AVAILABLE, LITE_MIN)


CASES: list[Case] = [
    # The gang cannot start.
    *(Case(MIN_AVAILABLE, v) for v in ("abc", "-1", "0", "99999999", "1.5", "three", "2x", "4.0")),
    Case(MIN_AVAILABLE, None),
    *(Case(LITE_MIN, v, "lite") for v in ("abc", "0", "1.5")),
    Case(LITE_MIN, None, "lite"),
    # Fall back to the default.
    *(Case(WAITING_TIME, v) for v in ("soon", "5 minutes", "1h30x", "forever")),
    *(Case(TOTAL_NUMBER, v) for v in ("x", "ten", "3.5", "many")),
    *(Case(MODE, v) for v in ("Sloppy", "Lenient", "Both", "Gentle")),
    *(Case(GROUPS, v) for v in ("not-json", '["no-slash"]', '{"a": "b"}', "[1, 2]")),
    *(Case(MATCH_POLICY, v) for v in ("sometimes", "always", "never-ever")),
    # On a PodGroup's annotations.
    Case(MODE, "Sloppy", "podgroup"),
    Case(WAITING_TIME, "soon", "podgroup"),
]


def test_malformed_declarations_are_each_explained_while_good_gangs_bind(
    clean_nodes: Cluster,
    namespace: str,
    daemon: Daemon,
    gang_book: GangBook,
    check_invariants: None,
) -> None:
    assert len(CASES) >= 30
    cluster = clean_nodes
    cluster.add_nodes(["messy-1", "messy-2"], {"cpu": "8", "memory": "32Gi"})
    small = {"cpu": "50m", "memory": "64Mi"}

    broken: list[tuple[Case, Gang]] = []
    for i, case in enumerate(CASES):
        name = f"bad-{i:02d}"
        if case.fatal:
            gang = gang_book.gang(
                name,
                1,
                way=case.way,
                min_text=case.value,
                omit_min=case.value is None,
                requests=small,
            )
        else:
            value = case.value or ""
            gang = gang_book.gang(name, 2, way=case.way, options={case.key: value}, requests=small)
        broken.append((case, gang))
    good = [
        gang_book.gang(f"good-{way}", 3, way=way, requests=small)
        for way in ("podgroup", "lite", "annotations")
    ]

    # Good and bad submitted interleaved.
    for index, (_, gang) in enumerate(broken):
        gang_book.create(gang)
        if index % 10 == 0 and index // 10 < len(good):
            gang_book.create(good[index // 10])

    def outstanding() -> list[str]:
        missing: list[str] = []
        for gang in good:
            if bound_count(cluster, gang) < 3:
                missing.append(f"{gang.key} not bound")
        for case, gang in broken:
            extra = [gang.name] if case.way == "podgroup" else []
            if not _reported(cluster, gang, case.key, case.value, extra):
                missing.append(f"{gang.key}: no {REASON} naming {case.key}={case.value!r}")
            if case.fatal:
                for name in gang.pod_names():
                    message = explanation(cluster.pod(namespace, name)) or ""
                    if case.key not in message:
                        missing.append(f"{namespace}/{name}: condition does not name {case.key}")
            elif bound_count(cluster, gang) < 2:
                missing.append(f"{gang.key}: not bound despite falling back to defaults")
        return missing

    try:
        wait_until(lambda: not outstanding(), timeout=50, interval=1, what="every case handled")
    except AssertionError:
        raise AssertionError("not handled: " + "; ".join(outstanding())) from None

    # Nothing with a fatal mistake was bound; the scheduler still schedules new work.
    for case, gang in broken:
        if case.fatal:
            assert bound_count(cluster, gang) == 0, f"{gang.key} bound with {case}"
    cluster.create_pod(namespace, pod_body("afterwards", requests=small))
    wait_until(
        lambda: cluster.pod(namespace, "afterwards").spec.node_name,
        timeout=30,
        what="a plain pod bound after the malformed gangs",
    )
