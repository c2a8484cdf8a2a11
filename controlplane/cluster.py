"""LocalControlPlane: etcd + kube-apiserver + kwok + kube-controller-manager on loopback, for e2e
tests and the demo.

The processes outlive the Python process that started them (so `make cluster-up` returns and a
test session can reuse a cluster someone left up); everything needed to find, check and stop
them again is in the state directory: pid files, `cluster.json` (ports and token), the
kubeconfig, and one log per process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import probes
from .build import binary_paths, control_plane_binaries, ensure_built
from .crds import install_crds
from .credentials import apiserver_ca_bundle, generate_service_account_key, write_admin_token
from .kubeconfig import api_client_from, write_kubeconfig
from .layout import DEFAULT_STATE_DIR, StateDir
from .locking import exclusive_lock
from .nodes import NodeSpec, create_nodes, load_node_specs, wait_nodes_ready
from .ports import free_loopback_ports
from .processes import (
    ProcessRecord,
    arguments,
    executable,
    is_running,
    log_tail,
    signal_process,
    start_process,
    stop_process,
)
from .progress import Reporter
from .releases import KubeRelease, selected_release

ETCD = "etcd"
APISERVER = "kube-apiserver"
KWOK = "kwok"
CONTROLLER_MANAGER = "kube-controller-manager"
START_ORDER = (ETCD, APISERVER, KWOK, CONTROLLER_MANAGER)
#: The processes started with the release's feature gates.
GATED = (APISERVER, CONTROLLER_MANAGER)
STOP_ORDER = tuple(reversed(START_ORDER))

#: The controllers a user's workloads need here: Jobs, Deployments, StatefulSets, DaemonSets
#: and CronJobs make pods (an Indexed Job with parallelism == completions > 1 also gets a
#: Workload and a gang PodGroup, see releases.py), PodDisruptionBudgets get their status,
#: deleted namespaces are emptied, owners' deletions cascade, and the
#: scheduling.k8s.io/podgroup-protection finalizer (stamped on every PodGroup by the
#: PodGroupProtection admission plugin) is removed once no unfinished pod names the group, so
#: deleting a PodGroup does not hang; ResourceClaims are made from their templates for pods,
#: pods that are gone leave their claims' ``reservedFor``, and claims nobody uses any more are
#: deallocated (their delete-protection finalizer removed); pods using a device tainted
#: NoExecute (by its driver, or a DeviceTaintRule) are evicted. Left out on purpose:
#: node-lifecycle (kwok's lease renewals lag on a saturated 2-core machine, and nodes must
#: not be tainted NotReady under a test or a benchmark), taint-eviction, volume binding (tests
#: bind their claims themselves), and everything about services, certificates and clouds.
CONTROLLERS = (
    "cronjob-controller",
    "daemonset-controller",
    "deployment-controller",
    "device-taint-eviction-controller",
    "disruption-controller",
    "garbage-collector-controller",
    "job-controller",
    "namespace-controller",
    "pod-garbage-collector-controller",
    "podgroup-protection-controller",
    "replicaset-controller",
    "resourceclaim-controller",
    "serviceaccount-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
)

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# Pod IPs kwok hands out. Not the service range: a pod IP equal to a ClusterIP (10.0.0.1 is
# the kubernetes service) would be confusing in logs. kind uses the same pod subnet.
POD_CIDR = "10.244.0.1/16"
# hostIP of every fake pod, from the documentation range (RFC 5737): clearly not a real host.
FAKE_NODE_IP = "192.0.2.1"

KWOK_STAGES = Path(__file__).resolve().parent / "kwok-stages.yaml"

#: Writes only (reads would flood the log), at Metadata level: who, what, when, with which
#: user agent.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  # Bindings with their body: the node each was for (a double binding shows two).
  - level: Request
    verbs: [create]
    resources: [{group: "", resources: ["pods/binding"]}]
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
"""

STARTUP_TIMEOUTS = {ETCD: 30.0, APISERVER: 90.0, KWOK: 30.0, CONTROLLER_MANAGER: 60.0}


class ControlPlaneError(RuntimeError):
    """The control plane could not be started or stopped; the message says where to look."""


@dataclass(frozen=True)
class Endpoints:
    """What a running cluster listens on; saved as cluster.json next to the pid files."""

    etcd_client_port: int
    etcd_peer_port: int
    apiserver_port: int
    kwok_port: int
    token: str
    # The API server's self-signed CA bundle, or None when clients skip TLS verification.
    ca_bundle: str | None
    # kube-controller-manager's secure port; None when the plane runs without it.
    controller_manager_port: int | None = None

    @property
    def apiserver_url(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    def tls_context(self) -> ssl.SSLContext:
        return probes.tls_context(Path(self.ca_bundle) if self.ca_bundle else None)

    def save(self, path: Path) -> None:
        # Holds the admin token: readable by us only.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> Endpoints | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


@dataclass(frozen=True)
class Status:
    up: bool
    kubeconfig: Path
    # Per process: "running (pid N)" or "not running".
    processes: dict[str, str]
    detail: str

    def describe(self) -> str:
        lines = [f"control plane: {'up' if self.up else 'down'} ({self.detail})"]
        lines += [f"  {name}: {state}" for name, state in self.processes.items()]
        lines.append(f"kubeconfig: {self.kubeconfig}")
        return "\n".join(lines)


class LocalControlPlane:
    """A local etcd + kube-apiserver + kwok (+ kube-controller-manager unless
    `controllers=False`), started from binaries built by `build.py`. `up()` also installs the
    CRDs of `manifests/crds/`.

    Typical use in a session fixture:

        plane = LocalControlPlane()
        kubeconfig = plane.up()          # no nodes; or up(nodes_file=DEFAULT_NODES_FILE)
        ...
        plane.down()
    """

    def __init__(
        self,
        state_dir: Path | str | None = None,
        *,
        reporter: Reporter | None = None,
        controllers: bool = True,
        audit: bool = True,
        release: KubeRelease | None = None,
    ) -> None:
        self.state = StateDir(Path(state_dir or DEFAULT_STATE_DIR).resolve())
        #: The Kubernetes release to run (default: the one `KUBE` selects); a plane running
        #: another one is not reused but started afresh (its etcd data is not kept).
        self.release = release or selected_release()
        self.reporter = reporter or Reporter()
        #: Run kube-controller-manager (a running plane without it is restarted with it).
        self.controllers = controllers
        #: Log every write to the audit log (tests check who writes); the bench turns it off.
        self.audit = audit

    @property
    def processes(self) -> tuple[str, ...]:
        """The processes this plane needs, in start order."""
        if self.controllers:
            return START_ORDER
        return tuple(name for name in START_ORDER if name != CONTROLLER_MANAGER)

    # -- public API ---------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.state.kubeconfig

    def ensure_built(self) -> dict[str, Path]:
        return ensure_built(self.reporter, self.processes, control_plane_binaries(self.release))

    def is_up(self) -> bool:
        return self.status().up

    def status(self) -> Status:
        records = self._records()
        processes = {
            name: (
                f"running (pid {records[name].pid})"
                if name in records and is_running(records[name])
                else "not running"
            )
            for name in self.processes
        }
        healthy, detail = self._health()
        return Status(up=healthy, kubeconfig=self.kubeconfig, processes=processes, detail=detail)

    def up(self, nodes_file: Path | str | None = None, nodes: Sequence[NodeSpec] = ()) -> Path:
        """Start the control plane (or reuse a healthy one) and create nodes; returns the
        kubeconfig path.

        `nodes_file=None` creates no nodes from a file (tests usually create their own);
        pass `DEFAULT_NODES_FILE` for the sample cluster. `nodes` are created as well.
        Nodes that already exist are updated to match.
        """
        specs = list(load_node_specs(nodes_file)) if nodes_file is not None else []
        specs += nodes
        self.state.root.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(
            self.state.lock_file, on_wait=lambda: self.reporter.line("waiting for another `up` ...")
        ):
            healthy, detail = self._health()
            if healthy:
                self.reporter.line(f"reusing the running control plane in {self.state.root}")
                if not self.controllers:
                    self._stop_one(CONTROLLER_MANAGER)  # not wanted: it would only cost CPU
            else:
                if any(is_running(r) for r in self._records().values()):
                    self.reporter.line(f"control plane is not healthy ({detail}); restarting it")
                    self._stop_all()
                self._start_fresh(self.ensure_built())
            with self.reporter.step("installing the CRDs of manifests/crds"):
                install_crds(self.api_client())
            if specs:
                self._create_nodes(specs)
        self.reporter.line(str(self.kubeconfig))
        return self.kubeconfig

    def down(self) -> list[str]:
        """Stop kwok, the API server and etcd; returns one line per process saying what
        happened. Safe to call when nothing runs."""
        self.state.root.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(self.state.lock_file):
            return self._stop_all()

    def api_client(self) -> Any:
        """A kubernetes.client.ApiClient for this cluster (from the generated kubeconfig)."""
        return api_client_from(self.kubeconfig)

    def core_api(self) -> Any:
        """A kubernetes.client.CoreV1Api for this cluster."""
        from kubernetes import client

        return client.CoreV1Api(self.api_client())

    # -- faults, for e2e tests ------------------------------------------------------------------

    def take_down(self, name: str, *, grace: float = 15.0) -> None:
        """Stops one running process of the plane (SIGTERM, as an operator's restart does;
        SIGKILL after `grace` seconds) and leaves it down; `bring_up` brings it back with the
        same flags."""
        with exclusive_lock(self.state.lock_file), self.reporter.step(f"stopping {name}") as out:
            out.word = (
                self._stop_one(name, quiet=True, grace=grace).split(": ", 1)[-1]
                or "was not running"
            )

    def bring_up(self, name: str) -> None:
        """Starts one process of a running plane again, with the flags `up` gave it (same
        ports, certificates, data and log files), and waits until the whole plane is healthy:
        the processes that talk to it must have found it again too."""
        endpoints = Endpoints.load(self.state.cluster_file)
        if endpoints is None:
            raise ControlPlaneError(f"no {self.state.cluster_file}: the plane was never up")
        binaries = binary_paths(self.release)
        argv, extra_env, ready = self._process_spec(name, endpoints)
        with exclusive_lock(self.state.lock_file), self.reporter.step(f"starting {name}") as out:
            record = self._spawn(name, [str(binaries[name]), *argv], extra_env=extra_env)
            self._wait_until(ready, [record])
            self._wait_healthy()
            out.word = "ready"

    def restart(self, name: str, *, down_for: float = 0.0, grace: float = 15.0) -> None:
        """`take_down` (SIGKILL after `grace` seconds), `down_for` seconds with it down, then
        `bring_up`."""
        self.take_down(name, grace=grace)
        time.sleep(down_for)
        self.bring_up(name)

    @contextmanager
    def frozen(self, name: str) -> Iterator[None]:
        """SIGSTOP one process for the body of the `with`, then SIGCONT it and wait until the
        plane is healthy again. The process keeps its sockets: clients hang rather than fail,
        as with a stalled machine or a long GC pause."""
        record = self._records().get(name)
        if record is None or not is_running(record):
            raise ControlPlaneError(f"{name} is not running")
        self.reporter.line(f"freezing {name} (pid {record.pid})")
        started = time.monotonic()
        signal_process(record, signal.SIGSTOP)
        try:
            yield
        finally:
            # Always thawed: a plane left stopped would hang every test after this one.
            signal_process(record, signal.SIGCONT)
            with self.reporter.step(
                f"{name} thawed after {time.monotonic() - started:.1f} s; waiting for the plane"
            ):
                self._wait_healthy()

    def freeze(self, name: str, seconds: float) -> None:
        """`frozen` for `seconds`."""
        with self.frozen(name):
            time.sleep(seconds)

    def _process_spec(
        self, name: str, endpoints: Endpoints
    ) -> tuple[list[str], dict[str, str] | None, Callable[[], bool]]:
        """(flags, extra environment, readiness probe) of one process, as `_start_processes`
        starts it."""
        if name == ETCD:
            port = endpoints.etcd_client_port
            return self._etcd_args(endpoints), None, lambda: probes.etcd_healthy(port)
        if name == APISERVER:
            context = endpoints.tls_context()
            return (
                self._apiserver_args(endpoints),
                None,
                lambda: probes.apiserver_ready(endpoints.apiserver_port, endpoints.token, context),
            )
        if name == KWOK:
            return (
                self._kwok_args(endpoints),
                {"KWOK_WORKDIR": str(self.state.kwok_workdir)},
                lambda: probes.kwok_healthy(endpoints.kwok_port),
            )
        if name == CONTROLLER_MANAGER and endpoints.controller_manager_port is not None:
            manager_port = endpoints.controller_manager_port
            return (
                self._controller_manager_args(endpoints),
                None,
                lambda: probes.controller_manager_healthy(manager_port),
            )
        raise ControlPlaneError(f"{name} is not a process of this plane")

    def _wait_healthy(self, timeout: float = 90.0) -> None:
        """Until `_health` says up (every process answering its probe), or fail saying why."""
        deadline = time.monotonic() + timeout
        healthy, detail = self._health()
        while not healthy:
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"not healthy after {timeout:.0f} s: {detail}")
            time.sleep(0.2)
            healthy, detail = self._health()

    # -- starting -----------------------------------------------------------------------------

    def _start_fresh(self, binaries: dict[str, Path]) -> None:
        try:
            self._start_processes(binaries)
        except ControlPlaneError as error:
            self._stop_all(quiet=True)
            # A port picked as free can be taken by someone else before our process binds it.
            if "address already in use" not in str(error):
                raise
            self.reporter.line("a port was taken meanwhile; retrying with new ports")
            try:
                self._start_processes(binaries)
            except ControlPlaneError:
                self._stop_all(quiet=True)
                raise
        except BaseException:
            self._stop_all(quiet=True)  # never leave half a cluster behind
            raise

    def _start_processes(self, binaries: dict[str, Path]) -> None:
        state = self.state
        self._reset_state()
        etcd_client, etcd_peer, apiserver_port, kwok_port, manager_port = free_loopback_ports(5)
        token = write_admin_token(state.token_file)
        generate_service_account_key(state.service_account_key)
        if self.audit:
            state.audit_policy.write_text(AUDIT_POLICY)
        endpoints = Endpoints(
            etcd_client_port=etcd_client,
            etcd_peer_port=etcd_peer,
            apiserver_port=apiserver_port,
            kwok_port=kwok_port,
            token=token,
            ca_bundle=str(apiserver_ca_bundle(state.cert_dir)),
            controller_manager_port=manager_port if self.controllers else None,
        )

        with self.reporter.step("starting etcd"):
            etcd = self._spawn(ETCD, [str(binaries[ETCD]), *self._etcd_args(endpoints)])
            self._wait_until(lambda: probes.etcd_healthy(etcd_client), [etcd])

        with self.reporter.step("starting kube-apiserver") as outcome:
            apiserver = self._spawn(
                APISERVER, [str(binaries[APISERVER]), *self._apiserver_args(endpoints)]
            )
            endpoints = self._wait_apiserver_ready(endpoints, [etcd, apiserver])
            outcome.word = "ready"
        write_kubeconfig(
            state.kubeconfig,
            endpoints.apiserver_url,
            token,
            Path(endpoints.ca_bundle) if endpoints.ca_bundle else None,
        )
        endpoints.save(state.cluster_file)

        with self.reporter.step("starting kwok"):
            kwok = self._spawn(
                KWOK,
                [str(binaries[KWOK]), *self._kwok_args(endpoints)],
                extra_env={"KWOK_WORKDIR": str(state.kwok_workdir)},
            )
            self._wait_until(lambda: probes.kwok_healthy(kwok_port), [etcd, apiserver, kwok])

        if self.controllers:
            with self.reporter.step("starting kube-controller-manager"):
                manager = self._spawn(
                    CONTROLLER_MANAGER,
                    [str(binaries[CONTROLLER_MANAGER]), *self._controller_manager_args(endpoints)],
                )
                self._wait_until(
                    lambda: probes.controller_manager_healthy(manager_port),
                    [etcd, apiserver, kwok, manager],
                )

    def _reset_state(self) -> None:
        """A fresh start begins from empty etcd data, new credentials and new logs."""
        state = self.state
        for directory in (
            state.etcd_data,
            state.cert_dir,
            state.auth_dir,
            state.pid_dir,
            state.log_dir,
        ):
            shutil.rmtree(directory, ignore_errors=True)
        for file in (state.kubeconfig, state.cluster_file):
            file.unlink(missing_ok=True)
        for directory in (
            state.cert_dir,
            state.auth_dir,
            state.pid_dir,
            state.log_dir,
            state.kwok_workdir,
        ):
            directory.mkdir(parents=True, exist_ok=True)

    def _etcd_args(self, e: Endpoints) -> list[str]:
        client = f"http://127.0.0.1:{e.etcd_client_port}"
        peer = f"http://127.0.0.1:{e.etcd_peer_port}"
        return [
            "--name=koordgang",
            f"--data-dir={self.state.etcd_data}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=koordgang={peer}",
            "--initial-cluster-state=new",
            # Test data is thrown away on every fresh start; fsync only costs latency.
            "--unsafe-no-fsync",
            # Room for benchmark churn between the API server's 5-minute compactions
            # (the 2 GiB default can fill up and turn etcd read-only).
            "--quota-backend-bytes=8589934592",
        ]

    def _apiserver_args(self, e: Endpoints) -> list[str]:
        key = self.state.service_account_key
        return [
            f"--etcd-servers=http://127.0.0.1:{e.etcd_client_port}",
            f"--cert-dir={self.state.cert_dir}",
            "--bind-address=127.0.0.1",
            # Without it the API server looks for a host interface with a default route to
            # advertise, which fails on machines without one.
            "--advertise-address=127.0.0.1",
            f"--secure-port={e.apiserver_port}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--authorization-mode=RBAC",
            f"--token-auth-file={self.state.token_file}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={key}",
            f"--service-account-signing-key-file={key}",
            # ServiceAccount admission would wait for token controllers we do not run;
            # TaintNodesByCondition would taint new nodes not-ready until a node controller
            # we do not run clears it. Priority stays on: preemption needs spec.priority.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--allow-privileged=true",
            f"--feature-gates={self.release.feature_gates}",
            f"--runtime-config={self.release.runtime_config}",
            *(
                [
                    f"--audit-policy-file={self.state.audit_policy}",
                    f"--audit-log-path={self.state.audit_log}",
                    "--audit-log-format=json",
                    "--audit-log-maxsize=200",
                ]
                if self.audit
                else []
            ),
            # The default reconciler would publish 127.0.0.1 as the endpoint of the
            # `kubernetes` service, which validation refuses (loopback), and retry every 10 s
            # forever. Nothing in this cluster reaches the API server through that service.
            "--endpoint-reconciler-type=none",
        ]

    def _kwok_args(self, e: Endpoints) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            # Only our fake nodes; a kind cluster's real nodes would never carry this.
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            # No node Leases: 1,000 fake kubelets renewing them every 10 s (kwok renews them
            # all within 0.4 s of each other) take a sixth of a 2-core machine in bursts, and
            # nothing here reads them (no node lifecycle controller). Liveness is the node
            # status kwok rewrites every 5-10 minutes (KWOK_STAGES).
            "--node-lease-duration-seconds=0",
            f"--cidr={POD_CIDR}",
            # Node stages, and pod stages with a deletion delay a test can ask for (see the file).
            f"--config={KWOK_STAGES}",
            f"--node-ip={FAKE_NODE_IP}",
            # Serves /healthz, which answers once kwok's controllers have started.
            f"--server-address=127.0.0.1:{e.kwok_port}",
        ]

    def _controller_manager_args(self, e: Endpoints) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--controllers={','.join(CONTROLLERS)}",
            f"--feature-gates={self.release.feature_gates}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={e.controller_manager_port}",
            # The default 20 requests/s makes a Deployment of a few hundred pods take long.
            "--kube-api-qps=200",
            "--kube-api-burst=400",
        ]

    def _spawn(
        self, name: str, argv: list[str], extra_env: dict[str, str] | None = None
    ) -> ProcessRecord:
        return start_process(
            name,
            argv,
            log_file=self.state.log_file(name),
            pid_file=self.state.pid_file(name),
            cwd=self.state.root,
            extra_env=extra_env,
        )

    def _wait_apiserver_ready(
        self, endpoints: Endpoints, watched: list[ProcessRecord]
    ) -> Endpoints:
        """Wait for /readyz; verify TLS with the API server's own CA if that works, else fall
        back to skipping verification (and say so)."""
        ca_bundle = Path(endpoints.ca_bundle) if endpoints.ca_bundle else None
        # The bundle is written during start-up, before the port opens.
        self._wait_until(lambda: ca_bundle is None or ca_bundle.exists(), watched)
        context = endpoints.tls_context()
        try:
            self._wait_until(
                lambda: probes.apiserver_ready(endpoints.apiserver_port, endpoints.token, context),
                watched,
            )
            return endpoints
        except ssl.SSLCertVerificationError as error:
            self.reporter.line(
                f"cannot verify the API server's certificate ({error.reason}); "
                "the kubeconfig will skip TLS verification"
            )
        insecure = Endpoints(**{**asdict(endpoints), "ca_bundle": None})
        context = insecure.tls_context()
        self._wait_until(
            lambda: probes.apiserver_ready(insecure.apiserver_port, insecure.token, context),
            watched,
        )
        return insecure

    def _wait_until(self, ready: Callable[[], bool], watched: list[ProcessRecord]) -> None:
        """Poll `ready`; fail early, with the log, if a watched process exits meanwhile."""
        newest = watched[-1]
        deadline = time.monotonic() + STARTUP_TIMEOUTS[newest.name]
        while True:
            if ready():
                return
            for record in watched:
                if not is_running(record):
                    raise ControlPlaneError(
                        f"{record.name} exited during start-up; end of {record.log_file}:\n"
                        f"{log_tail(record)}"
                    )
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{newest.name} not ready after {STARTUP_TIMEOUTS[newest.name]:.0f} s; "
                    f"end of {newest.log_file}:\n{log_tail(newest)}"
                )
            time.sleep(0.1)

    def _create_nodes(self, specs: list[NodeSpec]) -> None:
        with self.reporter.step(f"creating {len(specs)} nodes") as outcome:
            api = self.core_api()  # most of this step: importing the kubernetes client
            names = create_nodes(api, specs)
            wait_nodes_ready(api, names)
            outcome.word = "Ready"

    # -- health and stopping ------------------------------------------------------------------

    def _records(self) -> dict[str, ProcessRecord]:
        records = {}
        for name in START_ORDER:
            record = ProcessRecord.load(self.state.pid_file(name))
            if record is not None:
                records[name] = record
        return records

    def _stale_process(self) -> str:
        """Why a process of this plane may not be reused ("" if none): not running, or
        started from another build or with other feature gates."""
        records = self._records()
        expected = binary_paths(self.release)
        wanted = f"--feature-gates={self.release.feature_gates}"
        for name in self.processes:
            if name not in records or not is_running(records[name]):
                return f"{name} is not running"
            # After a pin changes, a cluster started from the previous build must not be reused.
            running = executable(records[name])
            if running is not None and running != expected[name]:
                return f"{name} runs {running.name}, not the current {expected[name].name}"
            # Nor one started before a feature gate was added: the tests of that feature
            # would meet a server without it.
            args = arguments(records[name]) if name in GATED else None
            if args is not None and wanted not in args:
                return f"{name} runs without {wanted}"
        return ""

    def _health(self) -> tuple[bool, str]:
        """(healthy, why): every process ours and alive, and each answering its probe."""
        stale = self._stale_process()
        if stale:
            return False, stale
        endpoints = Endpoints.load(self.state.cluster_file)
        if endpoints is None or not self.kubeconfig.exists():
            return False, f"{self.state.cluster_file.name} or the kubeconfig is missing"
        if not probes.etcd_healthy(endpoints.etcd_client_port):
            return False, "etcd does not answer /health"
        try:
            if not probes.apiserver_ready(
                endpoints.apiserver_port, endpoints.token, endpoints.tls_context()
            ):
                return False, "kube-apiserver is not ready"
            # A plane started before the gang API was switched on must not be reused.
            gang_api = self.release.podgroup_path
            served, _ = probes.http_get(
                endpoints.apiserver_url + gang_api,
                token=endpoints.token,
                context=endpoints.tls_context(),
            )
            if served != 200:
                return False, f"kube-apiserver does not serve {gang_api}"
        except (ssl.SSLError, OSError) as error:
            return False, f"kube-apiserver TLS check failed: {error}"
        if not probes.kwok_healthy(endpoints.kwok_port):
            return False, "kwok does not answer /healthz"
        if self.audit and not self.state.audit_policy.exists():
            return False, "started without the audit log this plane wants"
        if self.controllers and (
            endpoints.controller_manager_port is None
            or not probes.controller_manager_healthy(endpoints.controller_manager_port)
        ):
            return False, "kube-controller-manager does not answer /healthz"
        return True, endpoints.apiserver_url

    def _stop_all(self, *, quiet: bool = False) -> list[str]:
        results = [line for name in STOP_ORDER if (line := self._stop_one(name, quiet=quiet))]
        leftovers = [r for r in self._records().values() if is_running(r)]
        if leftovers:
            raise ControlPlaneError(f"still running: {[r.name for r in leftovers]}")
        if not results and not quiet:
            self.reporter.line("nothing was running")
        self.state.cluster_file.unlink(missing_ok=True)
        return results

    def _stop_one(self, name: str, *, quiet: bool = False, grace: float = 15.0) -> str:
        """Stops one process if it has a pid file; returns what happened ("" if nothing)."""
        pid_file = self.state.pid_file(name)
        record = ProcessRecord.load(pid_file)
        if record is None:
            return ""
        # A process left frozen (a test killed during `frozen`) would not act on SIGTERM.
        signal_process(record, signal.SIGCONT)
        try:
            outcome = stop_process(record, timeout=grace)
        except RuntimeError as error:
            raise ControlPlaneError(str(error)) from error
        line = f"{name} (pid {record.pid}): {outcome}"
        if not quiet:
            self.reporter.line(line)
        pid_file.unlink(missing_ok=True)
        return line
