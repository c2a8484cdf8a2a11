"""Turns informer bodies into model summaries and hands them to the intake."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import structlog

from koordgang.engine.intake import Intake
from koordgang.gangapis import POD_ANNOTATION_KEYS
from koordgang.model.budgets import BudgetInfo, parse_budget
from koordgang.model.dra import (
    DeviceClassInfo,
    ResourceClaimInfo,
    ResourceSliceInfo,
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from koordgang.model.errors import ModelError
from koordgang.model.node import NodeInfo, parse_node
from koordgang.model.pod import PodInfo, PodParseError, parse_pod
from koordgang.model.volumes import ClaimInfo, parse_claim

log = structlog.get_logger("koordgang.feeds")

T = TypeVar("T")


class _Feed(Generic[T]):
    """Parses what an informer delivers; a LIST is collected page by page and handed over
    whole (the cache replaces its view), single events one by one."""

    def __init__(
        self,
        parse: Callable[[dict[str, Any]], T | None],
        listed: Callable[[Iterable[T]], None],
        upserted: Callable[[T], None],
        deleted: Callable[[dict[str, Any]], None],
    ) -> None:
        self._parse = parse
        self._on_listed = listed
        self._on_upserted = upserted
        self._on_deleted = deleted
        self._listed: list[T] = []

    def begin_list(self) -> None:
        self._listed = []

    def list_page(self, items: list[dict[str, Any]]) -> None:
        self._listed.extend(x for x in map(self._parse, items) if x is not None)

    def end_list(self) -> None:
        listed, self._listed = self._listed, []
        self._on_listed(listed)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._on_deleted(obj.get("metadata") or {})
            return
        parsed = self._parse(obj)
        if parsed is not None:
            self._on_upserted(parsed)


def pod_feed(intake: Intake) -> _Feed[PodInfo]:
    def parse(obj: dict[str, Any]) -> PodInfo | None:
        try:
            return parse_pod(obj, annotation_prefixes=POD_ANNOTATION_KEYS)
        except PodParseError as error:
            intake.on_pod_invalid(obj, error)
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("uid"):
            intake.on_pod_delete(str(meta["uid"]))

    return _Feed(parse, intake.on_pods_listed, intake.on_pod_upsert, deleted)


def node_feed(intake: Intake) -> _Feed[NodeInfo]:
    def parse(obj: dict[str, Any]) -> NodeInfo | None:
        try:
            return parse_node(obj)
        except ModelError as error:
            name = (obj.get("metadata") or {}).get("name")
            log.warning("node ignored: cannot read it", node=name, error=str(error))
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_node_delete(str(meta["name"]))

    return _Feed(parse, intake.on_nodes_listed, intake.on_node_upsert, deleted)


def namespace_feed(intake: Intake) -> _Feed[tuple[str, dict[str, str]]]:
    def parse(obj: dict[str, Any]) -> tuple[str, dict[str, str]] | None:
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        labels = meta.get("labels") or {}
        if not isinstance(name, str) or not isinstance(labels, dict):
            return None
        return name, {str(k): str(v) for k, v in labels.items()}

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_namespace_delete(str(meta["name"]))

    return _Feed(parse, intake.on_namespaces_listed, intake.on_namespace_upsert, deleted)


def claim_feed(intake: Intake) -> _Feed[ClaimInfo]:
    def parse(obj: dict[str, Any]) -> ClaimInfo | None:
        try:
            return parse_claim(obj)
        except ModelError as error:
            name = (obj.get("metadata") or {}).get("name")
            log.warning("claim ignored: cannot read it", claim=name, error=str(error))
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_claim_delete(f"{meta.get('namespace') or 'default'}/{meta['name']}")

    return _Feed(parse, intake.on_claims_listed, intake.on_claim_upsert, deleted)


def budget_feed(intake: Intake) -> _Feed[BudgetInfo]:
    def parse(obj: dict[str, Any]) -> BudgetInfo | None:
        try:
            return parse_budget(obj)
        except ModelError as error:
            name = (obj.get("metadata") or {}).get("name")
            log.warning("disruption budget ignored: cannot read it", budget=name, error=str(error))
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_budget_delete(f"{meta.get('namespace') or 'default'}/{meta['name']}")

    return _Feed(parse, intake.on_budgets_listed, intake.on_budget_upsert, deleted)


def _named(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name")
    return f"{namespace}/{name}" if namespace else str(name)


def resource_slice_feed(intake: Intake) -> _Feed[ResourceSliceInfo]:
    def parse(obj: dict[str, Any]) -> ResourceSliceInfo | None:
        try:
            return parse_resource_slice(obj)
        except ModelError as error:
            log.warning(
                "resource slice ignored: cannot read it", slice=_named(obj), error=str(error)
            )
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_resource_slice_delete(str(meta["name"]))

    return _Feed(parse, intake.on_resource_slices_listed, intake.on_resource_slice_upsert, deleted)


def device_class_feed(intake: Intake) -> _Feed[DeviceClassInfo]:
    def parse(obj: dict[str, Any]) -> DeviceClassInfo | None:
        try:
            return parse_device_class(obj)
        except ModelError as error:
            log.warning(
                "device class ignored: cannot read it", device_class=_named(obj), error=str(error)
            )
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_device_class_delete(str(meta["name"]))

    return _Feed(parse, intake.on_device_classes_listed, intake.on_device_class_upsert, deleted)


def resource_claim_feed(intake: Intake) -> _Feed[ResourceClaimInfo]:
    def parse(obj: dict[str, Any]) -> ResourceClaimInfo | None:
        try:
            return parse_resource_claim(obj)
        except ModelError as error:
            # Its allocation cannot be read either: whoever wrote it keeps its devices out of
            # our sight. Said loudly, since devices may be given twice.
            log.error(
                "resource claim ignored: its status cannot be read",
                claim=_named(obj),
                error=str(error),
            )
            return None

    def deleted(meta: dict[str, Any]) -> None:
        if meta.get("name"):
            intake.on_resource_claim_delete(f"{meta.get('namespace') or 'default'}/{meta['name']}")

    return _Feed(parse, intake.on_resource_claims_listed, intake.on_resource_claim_upsert, deleted)
