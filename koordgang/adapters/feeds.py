"""Turns informer bodies into model summaries and hands them to the scheduler."""

from __future__ import annotations

from typing import Any

import structlog

from koordgang.engine.scheduler import Scheduler
from koordgang.model.gang import SCHEDULER_ANNOTATION_PREFIXES
from koordgang.model.node import NodeInfo, NodeParseError, parse_node
from koordgang.model.pod import PodInfo, PodParseError, parse_pod

log = structlog.get_logger("koordgang.feeds")


class PodFeed:
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._listed: list[PodInfo] = []

    def _parse(self, obj: dict[str, Any]) -> PodInfo | None:
        try:
            return parse_pod(obj, annotation_prefixes=SCHEDULER_ANNOTATION_PREFIXES)
        except PodParseError as error:
            self.scheduler.on_pod_invalid(obj, error)
            return None

    def begin_list(self) -> None:
        self._listed = []

    def list_page(self, items: list[dict[str, Any]]) -> None:
        self._listed.extend(x for x in map(self._parse, items) if x is not None)

    def end_list(self) -> None:
        listed, self._listed = self._listed, []
        self.scheduler.on_pods_listed(listed)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            uid = (obj.get("metadata") or {}).get("uid")
            if uid:
                self.scheduler.on_pod_delete(str(uid))
            return
        pod = self._parse(obj)
        if pod is not None:
            self.scheduler.on_pod_upsert(pod)


class NodeFeed:
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._listed: list[NodeInfo] = []

    def _parse(self, obj: dict[str, Any]) -> NodeInfo | None:
        try:
            return parse_node(obj)
        except NodeParseError as error:
            name = (obj.get("metadata") or {}).get("name")
            log.warning("node ignored: cannot read it", node=name, error=str(error))
            return None

    def begin_list(self) -> None:
        self._listed = []

    def list_page(self, items: list[dict[str, Any]]) -> None:
        self._listed.extend(x for x in map(self._parse, items) if x is not None)

    def end_list(self) -> None:
        listed, self._listed = self._listed, []
        self.scheduler.on_nodes_listed(listed)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            name = (obj.get("metadata") or {}).get("name")
            if name:
                self.scheduler.on_node_delete(str(name))
            return
        node = self._parse(obj)
        if node is not None:
            self.scheduler.on_node_upsert(node)
