"""Fixtures for e2e tests against a real API server.

Which server: ``KOORDGANG_E2E_KUBECONFIG`` if set (kind, see e2e/kind/), else the local control
plane (started here if it is not up, and stopped again at the end if it was started here).
The cluster belongs to the tests: fake nodes left from earlier runs are removed first.

The tests act as cluster admin (``kubeconfig``); the scheduler does not: it runs with a token
of the ServiceAccount of manifests/rbac.yaml (``scheduler_kubeconfig``, see harness/rbac.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane import LocalControlPlane
from controlplane.crds import install_crds
from controlplane.kubeconfig import api_client_from
from harness.clients.kube_scheduler import KubeScheduler
from harness.clients.process import ClientProcess
from harness.daemon import Daemon, DaemonFactory, DeploymentDaemon, LocalDaemon
from harness.disruptions import DisruptionWatch
from harness.dra import Devices
from harness.gangs import GangBook
from harness.invariants import AuditLog, assert_invariants
from harness.kube import Cluster, name_of, unique, wait_until
from harness.rbac import make_scheduler_kubeconfig, rbac_denials


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
        if _runs_real_clients(item):
            item.add_marker(pytest.mark.clients)


def _runs_real_clients(item: pytest.Item) -> bool:
    """Whether the test's module uses a real client of harness/clients/ (built from its release;
    `make test` runs these tests in a tier of their own, after the others)."""
    module = getattr(item, "module", None)
    return module is not None and any(
        str(getattr(value, "__module__", None) or "").startswith("harness.clients.")
        for value in vars(module).values()
    )


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[str]:
    given = os.environ.get("KOORDGANG_E2E_KUBECONFIG")
    if given:
        yield given
        return
    plane = LocalControlPlane()
    started_here = not plane.is_up()
    path = plane.up()
    try:
        yield str(path)
    finally:
        if started_here:
            plane.down()


@pytest.fixture(scope="session")
def control_plane(kubeconfig: str) -> LocalControlPlane:
    """The local control plane the tests run on, for tests that stop, restart or freeze its
    processes (each leaves it healthy again). Skipped on a cluster given by
    KOORDGANG_E2E_KUBECONFIG: its processes are not ours to stop."""
    if os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
        pytest.skip("stops processes of the local control plane")
    return LocalControlPlane()


@pytest.fixture
def audit_log(control_plane: LocalControlPlane) -> AuditLog:
    """The local control plane's audit log, read from the start of the test."""
    path = control_plane.state.audit_log
    assert path.exists(), "the local control plane runs with an audit log"
    return AuditLog(path)


@pytest.fixture(scope="session")
def cluster(kubeconfig: str) -> Cluster:
    api_client = api_client_from(kubeconfig)
    install_crds(api_client)
    handle = Cluster(api_client)
    handle.remove_all_fake_nodes()
    return handle


@pytest.fixture(scope="session")
def scheduler_kubeconfig(
    kubeconfig: str, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A kubeconfig holding only a token of the scheduler's ServiceAccount, bound to the RBAC
    of manifests/ (applied here as a user applies it)."""
    path = tmp_path_factory.mktemp("scheduler") / "kubeconfig"
    return str(make_scheduler_kubeconfig(kubeconfig, path))


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    name = cluster.create_namespace(unique("e2e"))
    yield name
    cluster.delete_namespace_pods(name)


@pytest.fixture
def clean_nodes(cluster: Cluster) -> Iterator[Cluster]:
    """A cluster with no fake nodes; nodes the test adds are removed afterwards."""
    cluster.remove_all_fake_nodes()
    yield cluster
    cluster.remove_all_fake_nodes()


@pytest.fixture
def daemon_factory(
    scheduler_kubeconfig: str, cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[DaemonFactory]:
    """Makes daemons; every one made is stopped at the end, and its log attached on failure.
    A daemon the RBAC of manifests/ denied anything fails the test."""
    made: list[Daemon] = []

    def make(*extra_args: str) -> Daemon:
        daemon: Daemon
        if os.environ.get("KOORDGANG_E2E_DAEMON") == "deployment":
            daemon = DeploymentDaemon(cluster)
        else:
            daemon = LocalDaemon(scheduler_kubeconfig, tmp_path, *extra_args)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        daemon.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for daemon in made:
            print(f"--- koordgang log ---\n{daemon.logs()[-20000:]}")
    denied = sorted({d for daemon in made for d in rbac_denials(daemon.logs())})
    assert not denied, f"the RBAC of manifests/ denied the scheduler: {denied}"


@pytest.fixture
def daemon(daemon_factory: DaemonFactory) -> Daemon:
    d = daemon_factory()
    d.start()
    return d


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def check_invariants(cluster: Cluster, namespace: str) -> Iterator[None]:
    """Use in a scenario: after it, no node is over-committed, kopf touched no pod, and every
    pending pod of ours is explained."""
    yield
    assert_invariants(cluster, namespace)


# -- shared by the preemption tests -----------------------------------------------------------

PRIORITIES = {"e2e-low": 10, "e2e-medium": 50, "e2e-high": 100}


@pytest.fixture(scope="module")
def priority_classes(cluster: Cluster) -> None:
    api = client.SchedulingV1Api(cluster.api_client)
    for name, value in PRIORITIES.items():
        body = client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=value)
        try:
            api.create_priority_class(body)
        except ApiException as error:
            if error.status != 409:
                raise


@pytest.fixture
def disruptions(cluster: Cluster, namespace: str) -> Iterator[DisruptionWatch]:
    recorder = DisruptionWatch(cluster, namespace)
    yield recorder
    recorder.stop()


@pytest.fixture
def batch(cluster: Cluster, namespace: str) -> Iterator[client.BatchV1Api]:
    """Jobs of the test, deleted at the end (with their pods) so that no controller makes
    pods while the namespace is emptied."""
    api = client.BatchV1Api(cluster.api_client)
    yield api
    for job in api.list_namespaced_job(namespace).items:
        api.delete_namespaced_job(name_of(job), namespace, propagation_policy="Background")
    wait_until(lambda: not api.list_namespaced_job(namespace).items, what="jobs deleted")


@pytest.fixture
def apps(cluster: Cluster, namespace: str) -> Iterator[client.AppsV1Api]:
    """Deployments of the test; deleted first at the end, so that no controller makes pods
    for later tests."""
    api = client.AppsV1Api(cluster.api_client)
    yield api
    for deployment in api.list_namespaced_deployment(namespace).items:
        api.delete_namespaced_deployment(
            name_of(deployment), namespace, propagation_policy="Orphan"
        )
    wait_until(
        lambda: (
            not client.AppsV1Api(cluster.api_client).list_namespaced_replica_set(namespace).items
            or all(
                api.delete_namespaced_replica_set(name_of(rs), namespace) is not None
                for rs in api.list_namespaced_replica_set(namespace).items
            )
        ),
        what="replica sets gone",
    )


# -- gangs -------------------------------------------------------------------------------------


@pytest.fixture(name="gang_book")
def gang_book_fixture(
    cluster: Cluster, namespace: str, request: pytest.FixtureRequest
) -> Iterator[GangBook]:
    """List it after ``daemon`` and before ``check_invariants`` in a test's arguments, so that
    ``check_invariants`` sees the scenario's end state before the book cleans up."""
    book = GangBook(cluster, namespace)
    yield book
    try:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.passed:
            book.check()
    finally:
        book.cleanup()


# -- real clients ------------------------------------------------------------------------------


@pytest.fixture
def clients(request: pytest.FixtureRequest) -> Iterator[list[ClientProcess]]:
    """The real clients a test started (it appends each once started): stopped at the end, and
    their logs printed if the test failed."""
    started: list[ClientProcess] = []
    yield started
    for process in reversed(started):
        process.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for process in started:
            print(f"--- {process.name} log ({process.log_path}) ---\n{process.log_tail(8000)}")


@pytest.fixture
def kube_scheduler(kubeconfig: str, clients: list[ClientProcess], tmp_path: Path) -> KubeScheduler:
    """kube-scheduler of the pinned release beside koordgang (its default profile, client QPS
    raised), started for the test and stopped after it; its log printed if the test failed.
    Skipped on a cluster given by KOORDGANG_E2E_KUBECONFIG: its own kube-scheduler would race
    ours for the same pods."""
    if os.environ.get("KOORDGANG_E2E_KUBECONFIG"):
        pytest.skip("runs kube-scheduler of its own; the given cluster has one")
    process = KubeScheduler(kubeconfig, tmp_path / "kube-scheduler.log")
    process.start()
    clients.append(process)
    return process


@pytest.fixture
def devices(cluster: Cluster) -> Iterator[Devices]:
    """A driver, class and slices of the test's own (Dynamic Resource Allocation), removed at
    the end with the DeviceTaintRules it made."""
    made = Devices(cluster)
    yield made
    made.remove()
