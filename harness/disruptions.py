"""A watch that keeps what victims show only briefly: the DisruptionTarget condition and the
nominated nodes of every pod of a namespace (a victim is deleted right after its condition is
written, so only a watch sees it)."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import watch

from harness.kube import Cluster


class DisruptionWatch:
    """Records every DisruptionTarget condition a pod of the namespace carried (victims are
    deleted right after, so only a watch sees them)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.seen: dict[str, Any] = {}
        #: pod name -> every nominatedNodeName it showed, in order.
        self.nominated: dict[str, list[str]] = {}
        self._watch = watch.Watch()
        self._thread = threading.Thread(
            target=self._run, args=(cluster, namespace), daemon=True, name="disruption-watch"
        )
        self._thread.start()

    def _run(self, cluster: Cluster, namespace: str) -> None:
        try:
            for event in self._watch.stream(
                cluster.core.list_namespaced_pod, namespace, timeout_seconds=300
            ):
                self._record(event["object"])
        except Exception:
            return

    def _record(self, pod: Any) -> None:
        for condition in pod.status.conditions or []:
            if condition.type == "DisruptionTarget":
                self.seen[pod.metadata.name] = condition
        node = pod.status.nominated_node_name
        if node:
            history = self.nominated.setdefault(pod.metadata.name, [])
            if not history or history[-1] != node:
                history.append(node)

    def stop(self) -> None:
        self._watch.stop()
