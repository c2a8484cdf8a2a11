"""Setting the stage, fast: nodes, namespaces and pods created or deleted many at a time.

Uses koordgang's own aiohttp client (``KubeApi``) with the kubeconfig's token and CA; the
``kubernetes`` package creates pods one at a time at a fraction of the API server's speed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import yaml

from bench import dra
from bench.console import Ticker, say
from bench.gang_api import COMPOSITE_API_VERSION, GROUP_API_VERSIONS, GangApi, pod_manifest
from bench.workload import BENCH_LABEL, DraPlan, PodPlan
from controlplane import NodeSpec
from koordgang.clients.api import KubeApi
from koordgang.clients.config import load_connection
from koordgang.clients.errors import ApiError
from koordgang.clients.retry import with_retries

T = TypeVar("T")

CRDS = Path(__file__).resolve().parents[1] / "manifests" / "crds"
#: Requests in flight while setting up; more only queues up in the API server.
SETUP_CONCURRENCY = 32
#: Lists of names only: a twentieth of the bytes of full pods.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


async def run_pool(
    items: Sequence[T],
    work: Callable[[T], Awaitable[None]],
    *,
    label: str,
    concurrency: int = SETUP_CONCURRENCY,
) -> None:
    """``work`` on every item, ``concurrency`` at a time, saying how far it got every second."""
    if not items:
        return
    queue: asyncio.Queue[T] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    done = 0
    ticker = Ticker()

    async def worker() -> None:
        nonlocal done
        while not queue.empty():
            item = queue.get_nowait()
            await work(item)
            done += 1
            if ticker.due(final=done == len(items)):
                say(f"{label} {done}/{len(items)}")

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(items)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()


#: A collection of the API server's 1-2 GB heap takes a few seconds on 2 busy cores.
_GC_TIMEOUT_SECONDS = 120.0


class BenchCluster:
    """The benchmark's handle on the API server."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.api = KubeApi(load_connection(str(kubeconfig)), pool_size=128, user_agent="bench")

    async def close(self) -> None:
        await self.api.close()

    def headers(self, accept: str = "application/json") -> dict[str, str]:
        headers = {"Accept": accept}
        token = self.api.conn.current_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    # -- reading --------------------------------------------------------------------------------

    async def list_all(
        self, path: str, params: Mapping[str, str] | None = None, *, names_only: bool = False
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item of a paginated LIST, and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        cont = ""
        while True:
            query = {"limit": "1000", **(params or {})}
            if cont:
                query["continue"] = cont
            async with self.api.session.get(
                self.api.conn.server + path,
                params=query,
                headers=self.headers(METADATA_ONLY if names_only else "application/json"),
            ) as response:
                raw = await response.read()
                if response.status >= 400:
                    raise ApiError(response.status, "", raw[:300].decode(errors="replace"))
            page = json.loads(raw)
            items += page.get("items") or []
            cont = (page.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items, str((page.get("metadata") or {}).get("resourceVersion") or "")

    # -- CRDs and namespaces ------------------------------------------------------------------

    async def install_crds(self, paths: Iterable[Path] | None = None) -> list[str]:
        """Installs the CRDs in ``paths`` (default: koordgang's), replacing any of the same name
        that another scheduler installed, and waits until each is served; returns their names.

        koordgang and koord-scheduler both define ``podgroups.scheduling.sigs.k8s.io``: each run
        installs its own, so that no scheduler runs on another's schema.
        """
        paths = sorted(CRDS.glob("*.yaml")) if paths is None else list(paths)
        names: list[str] = []
        for path in paths:
            for body in yaml.safe_load_all(path.read_text()):
                if not body or body.get("kind") != "CustomResourceDefinition":
                    continue
                names.append(body["metadata"]["name"])
                await self._replace_crd(body)
        for name in names:
            await self._wait_established(name)
        return names

    async def _replace_crd(self, body: dict[str, Any]) -> None:
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        name = body["metadata"]["name"]
        try:
            await self.api.request("POST", base, body=body)
            return
        except ApiError as error:
            if not error.conflict:
                raise
        current = await self.api.request("GET", f"{base}/{name}")
        if current.get("spec") == _defaulted_crd_spec(body.get("spec") or {}):
            return
        # Another scheduler's schema: delete it (and the objects under it) and create ours. A
        # replace in place is refused when the stored versions differ.
        await self.api.request("DELETE", f"{base}/{name}")
        for _ in range(300):
            try:
                await self.api.request("GET", f"{base}/{name}")
            except ApiError as error:
                if error.not_found:
                    break
                raise
            await asyncio.sleep(0.1)
        await self.api.request("POST", base, body=body)

    async def _wait_established(self, name: str, timeout: float = 60) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            crd = await self.api.request("GET", path)
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            ):
                return
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"CRD {name} not established after {timeout:.0f} s")
            await asyncio.sleep(0.2)

    async def create_objects(self, namespace: str, bodies: Sequence[dict[str, Any]]) -> None:
        """Namespaced custom objects (PodGroups), at their ``apiVersion``'s path."""

        async def create(body: dict[str, Any]) -> None:
            plural = body["kind"].lower() + "s"
            path = f"/apis/{body['apiVersion']}/namespaces/{namespace}/{plural}"
            await with_retries(lambda: self.api.request("POST", path, body=body))

        await run_pool(bodies, create, label="creating pod groups")

    async def served(self, path: str) -> bool:
        """Whether the API server serves ``path`` (e.g. ``/apis/<group>/<version>``)."""
        try:
            await self.api.request("GET", path)
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return True

    async def get_raw(self, path: str, accept: str, timeout: float) -> tuple[int, bytes]:
        """GET of a path outside the API's objects (``/metrics``, ``/debug/pprof/...``): the
        status and the body as they came. Raises aiohttp.ClientError or TimeoutError."""
        async with self.api.session.get(
            self.api.conn.server + path,
            headers=self.headers(accept),
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            return response.status, await response.read()

    async def collect_apiserver_garbage(self) -> str | None:
        """Has kube-apiserver run a full garbage collection now; None when it did, else why not.

        Go's heap-profile handler collects before it answers when asked with ``gc=1`` (served
        at ``/debug/pprof`` while the API server's ``--profiling`` is on, its default). The
        set-up just before a measurement (thousands of pods created and deleted) leaves the
        API server's heap full of garbage; collected inside the measured window, it cost one
        scheduler 1-2 CPU s there and not another, by chance of timing. The reply (the
        profile) is read and thrown away.
        """
        try:
            status, data = await self.get_raw(
                "/debug/pprof/heap?gc=1", "application/octet-stream", _GC_TIMEOUT_SECONDS
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            return f"the request failed: {error!r}"
        if status >= 400:
            return f"it answered {status}: {data[:200].decode(errors='replace')}"
        return None

    async def delete_bench_groups(self) -> None:
        """The group objects (PodGroups of every gang API) of earlier scenarios. An upstream
        PodGroup keeps its protection finalizer until kube-controller-manager, which mostly
        does not run here, sees no pod naming it: the bench clears it itself, once the pods
        are gone."""
        selector = {"labelSelector": f"{BENCH_LABEL}=1"}
        kinds = [(v, "podgroups") for v in GROUP_API_VERSIONS.values()]
        for version, plural in [*kinds, (COMPOSITE_API_VERSION, "compositepodgroups")]:
            try:
                groups = await self._list_groups(version, selector, plural)
            except ApiError as error:
                if error.not_found:  # not served here
                    continue
                raise

            async def delete(
                group: dict[str, Any], version: str = version, plural: str = plural
            ) -> None:
                meta = group["metadata"]
                namespace, name = meta["namespace"], meta["name"]
                path = f"/apis/{version}/namespaces/{namespace}/{plural}/{name}"
                try:
                    await with_retries(lambda: self.api.request("DELETE", path))
                    if meta.get("finalizers"):
                        await with_retries(
                            lambda: self.api.request(
                                "PATCH",
                                path,
                                body={"metadata": {"finalizers": None}},
                                content_type="application/merge-patch+json",
                            )
                        )
                except ApiError as error:
                    if not error.not_found:
                        raise

            await run_pool(groups, delete, label=f"deleting leftover {version} {plural}")

    async def _list_groups(
        self, version: str, selector: Mapping[str, str], plural: str = "podgroups"
    ) -> list[Any]:
        async def once() -> list[Any]:
            items, _ = await self.list_all(f"/apis/{version}/{plural}", selector)
            return items

        # A CRD just (re)installed answers 429 while its storage initializes.
        return await with_retries(once, attempts=10)

    async def ensure_priority_classes(self, classes: Mapping[str, int]) -> None:
        for name, value in classes.items():
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            try:
                await self.api.request(
                    "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body=body
                )
            except ApiError as error:
                if not error.conflict:
                    raise

    async def set_topology(self, body: Mapping[str, Any] | None) -> None:
        """The ClusterNetworkTopology ``default``: replaced by ``body``, or deleted (None)."""
        path = "/apis/scheduling.koordinator.sh/v1alpha1/clusternetworktopologies"
        try:
            await self.api.request("DELETE", f"{path}/default")
        except ApiError as error:
            if not error.not_found:
                raise
        if body is not None:
            await self.api.request("POST", path, body=dict(body))

    async def count_pods(self, namespace: str, running: bool = False) -> int:
        return len(await self.pod_names(namespace, running))

    async def pod_names(self, namespace: str, running: bool = False) -> set[str]:
        params = {"fieldSelector": "status.phase=Running"} if running else {}
        pods, _ = await self.list_all(
            f"/api/v1/namespaces/{namespace}/pods", params, names_only=True
        )
        return {(p.get("metadata") or {}).get("name", "") for p in pods}

    async def create_namespace(self, name: str) -> None:
        body = {"metadata": {"name": name, "labels": {BENCH_LABEL: "1"}}}
        await self.api.request("POST", "/api/v1/namespaces", body=body)

    async def ensure_namespace(self, name: str) -> None:
        """A namespace that outlives the scenarios (no bench label: never deleted by us)."""
        try:
            await self.api.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
        except ApiError as error:
            if not error.conflict:
                raise

    async def delete_bench_namespaces(self, keep: str = "") -> None:
        """Namespaces of earlier scenarios (but ``keep``). Without kube-controller-manager a
        namespace never finishes deleting, so its finalizer is cleared here (its pods are
        already gone)."""
        namespaces, _ = await self.list_all(
            "/api/v1/namespaces", {"labelSelector": f"{BENCH_LABEL}=1"}
        )
        for namespace in namespaces:
            name = namespace["metadata"]["name"]
            if name == keep:
                continue
            try:
                await self.api.request("DELETE", f"/api/v1/namespaces/{name}")
                current = await self.api.request("GET", f"/api/v1/namespaces/{name}")
                current["spec"] = {"finalizers": []}
                await self.api.request("PUT", f"/api/v1/namespaces/{name}/finalize", body=current)
            except ApiError as error:
                if not error.not_found:
                    raise

    # -- pods ----------------------------------------------------------------------------------

    async def create_pods(
        self,
        namespace: str,
        plans: Sequence[PodPlan],
        label: str,
        gang_api: GangApi = GangApi.KOORDINATOR,
    ) -> None:
        async def create(plan: PodPlan) -> None:
            await self.create_pod(namespace, plan, gang_api)

        await run_pool(plans, create, label=label)

    async def create_pod(
        self, namespace: str, plan: PodPlan, gang_api: GangApi = GangApi.KOORDINATOR
    ) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods"
        body = pod_manifest(plan, gang_api)
        await with_retries(lambda: self.api.request("POST", path, body=body))

    async def delete_bench_pods(self, keep_namespace: str = "") -> None:
        """Every pod any benchmark run created (label ``koordgang-bench``), at once (grace 0),
        but those in ``keep_namespace``."""
        pods, _ = await self.list_all(
            "/api/v1/pods", {"labelSelector": f"{BENCH_LABEL}=1"}, names_only=True
        )
        keys = [
            (p["metadata"]["namespace"], p["metadata"]["name"])
            for p in pods
            if p["metadata"]["namespace"] != keep_namespace
        ]

        async def delete(key: tuple[str, str]) -> None:
            namespace, name = key
            try:
                await with_retries(
                    lambda: self.api.request(
                        "DELETE",
                        f"/api/v1/namespaces/{namespace}/pods/{name}",
                        params={"gracePeriodSeconds": "0"},
                    )
                )
            except ApiError as error:
                if not error.not_found:
                    raise

        await run_pool(keys, delete, label="deleting leftover pods")
        for _ in range(100):
            left, _ = await self.list_all(
                "/api/v1/pods", {"labelSelector": f"{BENCH_LABEL}=1"}, names_only=True
            )
            left = [p for p in left if p["metadata"]["namespace"] != keep_namespace]
            if not left:
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"{len(left)} benchmark pods still present after deleting them")

    async def wait_pods_running(self, namespace: str, count: int, timeout: float = 600) -> None:
        """Until kwok has marked ``count`` pods of the namespace Running (pods created bound)."""
        ticker = Ticker(2.0)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            # resourceVersion=0: served from the API server's cache, no etcd round trip.
            pending, _ = await self.list_all(
                f"/api/v1/namespaces/{namespace}/pods",
                {"fieldSelector": "status.phase!=Running", "resourceVersion": "0"},
                names_only=True,
            )
            running = count - len(pending)
            if not pending:
                say(f"kwok: {count}/{count} pods Running")
                return
            if ticker.due():
                say(f"kwok: {running}/{count} pods Running")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"kwok ran only {running}/{count} pods in {timeout:.0f} s")
            await asyncio.sleep(2.0)

    # -- Dynamic Resource Allocation -----------------------------------------------------------

    async def _list_bench(
        self, plural: str, *, names_only: bool = True
    ) -> list[dict[str, Any]] | None:
        """The bench's objects of ``resource.k8s.io`` ``plural`` (None: not served here)."""
        try:
            items, _ = await self.list_all(
                f"/apis/{dra.API_VERSION}/{plural}",
                {"labelSelector": f"{BENCH_LABEL}=1"},
                names_only=names_only,
            )
        except ApiError as error:
            if error.not_found:
                return None
            raise
        return items

    async def _bench_claims(self) -> list[dict[str, Any]]:
        """The bench's ResourceClaims, and every claim in a namespace of its: those a
        scheduler made for a pod's extended resources carry no bench label."""
        labelled = await self._list_bench("resourceclaims")
        if labelled is None:
            return []
        namespaces, _ = await self.list_all(
            "/api/v1/namespaces", {"labelSelector": f"{BENCH_LABEL}=1"}, names_only=True
        )
        ours = {n["metadata"]["name"] for n in namespaces}
        everything, _ = await self.list_all(
            f"/apis/{dra.API_VERSION}/resourceclaims", {}, names_only=True
        )
        seen = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in labelled}
        made = [
            c
            for c in everything
            if c["metadata"]["namespace"] in ours
            and (c["metadata"]["namespace"], c["metadata"]["name"]) not in seen
        ]
        return [*labelled, *made]

    async def delete_bench_claims(self) -> None:
        """Every ResourceClaim a run created, their finalizers cleared first (the scheduler
        that allocated one wrote ``resource.kubernetes.io/delete-protection``, which the
        resourceclaim controller, mostly not running here, would remove). Namespaces are
        deleted without their contents here, so a claim left behind would keep its devices
        allocated for the next scheduler's run."""
        claims = await self._bench_claims()
        if not claims:
            return

        async def delete(claim: dict[str, Any]) -> None:
            meta = claim["metadata"]
            path = (
                f"/apis/{dra.API_VERSION}/namespaces/{meta['namespace']}/resourceclaims/"
                f"{meta['name']}"
            )
            try:
                if meta.get("finalizers"):
                    await with_retries(
                        lambda: self.api.request(
                            "PATCH",
                            path,
                            body={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json",
                        )
                    )
                await with_retries(lambda: self.api.request("DELETE", path))
            except ApiError as error:
                if not error.not_found:
                    raise

        await run_pool(claims, delete, label="deleting leftover resource claims")
        for _ in range(100):
            if not await self._bench_claims():
                return
            await asyncio.sleep(0.2)
        raise RuntimeError("benchmark resource claims still present after deleting them")

    async def reconcile_dra(self, plan: DraPlan | None) -> None:
        """The DeviceClass and ResourceSlices of ``plan`` and no other of the bench's (None:
        none at all): slices of the same name and spec are kept, others replaced."""
        classes = await self._list_bench("deviceclasses", names_only=False)
        if classes is None:
            if plan is not None:
                raise RuntimeError(f"{dra.API_VERSION} is not served by this kube-apiserver")
            return
        wanted_classes = {
            c["metadata"]["name"]: dict(c) for c in (plan.device_classes if plan else ())
        }
        for current in classes:
            name = current["metadata"]["name"]
            wanted_class = wanted_classes.get(name)
            if wanted_class is not None and current.get("spec") == wanted_class["spec"]:
                del wanted_classes[name]  # kept as it is
                continue
            await self._delete_quietly(f"/apis/{dra.API_VERSION}/deviceclasses/{name}")

        async def create_class(body: dict[str, Any]) -> None:
            path = f"/apis/{dra.API_VERSION}/deviceclasses"
            await with_retries(lambda: self.api.request("POST", path, body=body))

        for body in wanted_classes.values():
            await create_class(body)
        slices = await self._list_bench("resourceslices") or []
        wanted = {s["metadata"]["name"]: s for s in (plan.slices if plan is not None else ())}
        keep: set[str] = set()
        stale: list[str] = []
        for current in slices:
            meta = current["metadata"]
            want = wanted.get(meta["name"])
            digest = (meta.get("annotations") or {}).get(dra.SPEC_DIGEST)
            if want is not None and digest == want["metadata"]["annotations"][dra.SPEC_DIGEST]:
                keep.add(meta["name"])
            else:
                stale.append(meta["name"])

        async def delete(name: str) -> None:
            await self._delete_quietly(f"/apis/{dra.API_VERSION}/resourceslices/{name}")

        async def create(body: Mapping[str, Any]) -> None:
            await with_retries(
                lambda: self.api.request(
                    "POST", f"/apis/{dra.API_VERSION}/resourceslices", body=dict(body)
                )
            )

        await run_pool(stale, delete, label="deleting resource slices")
        if keep:
            say(f"reusing {len(keep)} resource slices")
        missing = [body for name, body in wanted.items() if name not in keep]
        await run_pool(missing, create, label="creating resource slices")

    async def create_claims(self, namespace: str, bodies: Sequence[Mapping[str, Any]]) -> None:
        path = f"/apis/{dra.API_VERSION}/namespaces/{namespace}/resourceclaims"

        async def create(body: Mapping[str, Any]) -> None:
            await with_retries(lambda: self.api.request("POST", path, body=dict(body)))

        await run_pool(bodies, create, label="creating resource claims")

    async def _delete_quietly(self, path: str) -> None:
        try:
            await with_retries(lambda: self.api.request("DELETE", path))
        except ApiError as error:
            if not error.not_found:
                raise

    # -- nodes ---------------------------------------------------------------------------------

    async def reconcile_nodes(self, specs: Sequence[NodeSpec]) -> bool:
        """Make the fake nodes exactly ``specs``: nodes of the same name and capacity are kept,
        others deleted, missing ones created; then wait until kwok has made them Ready. True
        when any node was deleted or created."""
        wanted = {spec.name: spec for spec in specs}
        existing, _ = await self.list_all("/api/v1/nodes", {"labelSelector": "type=kwok"})
        keep: set[str] = set()
        stale: list[str] = []
        for node in existing:
            name = node["metadata"]["name"]
            spec = wanted.get(name)
            capacity = (node.get("status") or {}).get("capacity") or {}
            labels = node["metadata"].get("labels") or {}
            if (
                spec is not None
                and _same_quantities(capacity, spec.full_capacity())
                and all(labels.get(k) == v for k, v in spec.labels.items())
            ):
                keep.add(name)
            else:
                stale.append(name)

        async def delete(name: str) -> None:
            try:
                await with_retries(lambda: self.api.request("DELETE", f"/api/v1/nodes/{name}"))
            except ApiError as error:
                if not error.not_found:
                    raise

        async def create(spec: NodeSpec) -> None:
            body = spec.to_api()
            await with_retries(lambda: self.api.request("POST", "/api/v1/nodes", body=body))

        await run_pool(stale, delete, label="deleting nodes")
        missing = [spec for name, spec in wanted.items() if name not in keep]
        if keep:
            say(f"reusing {len(keep)} nodes")
        await run_pool(missing, create, label="creating nodes")
        await self.wait_nodes_ready(list(wanted))
        return bool(stale or missing)

    async def wait_nodes_ready(self, names: Iterable[str], timeout: float = 300) -> None:
        pending = set(names)
        total = len(pending)
        ticker = Ticker(2.0)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            nodes, _ = await self.list_all(
                "/api/v1/nodes", {"labelSelector": "type=kwok", "resourceVersion": "0"}
            )
            for node in nodes:
                conditions = (node.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                    pending.discard(node["metadata"]["name"])
            if not pending:
                say(f"nodes Ready {total}/{total}")
                return
            if ticker.due():
                say(f"nodes Ready {total - len(pending)}/{total}")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"{len(pending)} nodes not Ready after {timeout:.0f} s (kwok?)")
            await asyncio.sleep(0.5)


def _defaulted_crd_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A CRD's spec as the API server stores it: with ``conversion`` defaulted (without this a
    CRD identical to the installed one was deleted and made again, which deletes its objects
    and answers 429 "storage is (re)initializing" for a while)."""
    return {"conversion": {"strategy": "None"}, **spec}


def _same_quantities(actual: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    from koordgang.model.resources import parse_resource_list

    return parse_resource_list(actual) == parse_resource_list(wanted)
