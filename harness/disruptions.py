"""A watch that keeps what pods show only briefly: the DisruptionTarget condition, the nominated
nodes and the node each pod was bound to, with when the watch saw each (a victim is deleted
right after its condition is written, and a finished pod soon after it ran, so only a watch
sees them). Times are ``time.monotonic()`` at delivery: no earlier than the change itself."""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.kube import Cluster, PodWatch


class DisruptionWatch:
    """Records every DisruptionTarget condition a pod of the namespace carried (victims are
    deleted right after, so only a watch sees them)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.seen: dict[str, Any] = {}
        #: pod name -> every nominatedNodeName it showed, in order.
        self.nominated: dict[str, list[str]] = {}
        #: pod name -> (nominatedNodeName, when first seen), each change in order ("" when
        #: a nomination was given up).
        self.nominated_at: dict[str, list[tuple[str, float]]] = {}
        #: pod name -> (node, when its binding was first seen).
        self.bound: dict[str, tuple[str, float]] = {}
        #: ``namespace/name`` -> (uid, creationTimestamp) of every pod of that name seen, in
        #: order: a name re-created is a new pod (``invariants.double_bindings`` reads this).
        self.incarnations: dict[str, list[tuple[str, Any]]] = {}
        self._watch = PodWatch()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(cluster, namespace), daemon=True, name="disruption-watch"
        )
        self._thread.start()

    def _run(self, cluster: Cluster, namespace: str) -> None:
        # Watched again after a break (the API server restarted under a fault test): a new
        # watch lists the pods first, so what changed meanwhile is seen, late.
        while not self._stopped.is_set():
            try:
                for pod in self._watch.pods(cluster.core, namespace, timeout_seconds=300):
                    self._record(pod)
            except Exception:
                self._stopped.wait(0.5)

    def _record(self, pod: Any) -> None:
        now = time.monotonic()
        name = pod.metadata.name
        key = f"{pod.metadata.namespace}/{name}"
        seen = self.incarnations.setdefault(key, [])
        if not any(uid == pod.metadata.uid for uid, _ in seen):
            seen.append((pod.metadata.uid, pod.metadata.creation_timestamp))
        if pod.spec.node_name and name not in self.bound:
            self.bound[name] = (pod.spec.node_name, now)
        for condition in pod.status.conditions or []:
            if condition.type == "DisruptionTarget":
                self.seen[pod.metadata.name] = condition
        node = pod.status.nominated_node_name
        if node:
            history = self.nominated.setdefault(pod.metadata.name, [])
            if not history or history[-1] != node:
                history.append(node)
        changes = self.nominated_at.setdefault(name, [])
        # A nomination given up is recorded too (as ""), once the pod had one.
        if (node or changes) and (not changes or changes[-1][0] != (node or "")):
            changes.append((node or "", now))

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()
