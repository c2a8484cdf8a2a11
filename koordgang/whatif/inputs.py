"""The file a user asks about, read into the pods it would make and the gang objects it holds.

Pure: no I/O. A file is YAML (several documents allowed) or JSON, as ``kubectl apply -f`` takes
it, a ``List`` included. Every document is one of

- a Pod;
- a workload with a pod template and a count: a Job (the pods its controller makes at once:
  ``parallelism``, at most ``completions``), a Deployment, ReplicaSet or StatefulSet
  (``replicas``);
- a group object of a gang API koordgang reads (``GANG_APIS``: their ``resource``);
- a ResourceClaim, or a ResourceClaimTemplate (``resource.k8s.io``): the file's pods that name
  a template get a claim made from it, as the resourceclaim controller would make it (a
  template the file does not hold is refused: the what-if cannot read its spec). An entry
  that is the pod's upstream PodGroup's (a PodGroup of the file or of the cluster) is the
  PodGroup's one claim: the one the controller made for it already, or one made for it.

Pods are made as their controllers make them (names, the labels a Job controller adds, the
completion index of an Indexed Job), so that selectors and gang annotations read the same.
Anything else is refused with an error naming the document and the field: a what-if that
silently left a part out would answer a question nobody asked.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from koordgang.gangapis import GANG_APIS, GangApi
from koordgang.gangapis.kubernetes import GROUP as UPSTREAM_GROUP
from koordgang.model.dra import (
    PodClaimRef,
    PodGroupClaims,
    ResourceClaimInfo,
    parse_resource_claim,
)
from koordgang.model.errors import ModelError
from koordgang.model.gang import PodGroupInfo
from koordgang.model.pod import PodInfo, parse_pod

#: Pods a Job's controller labels its pods with (selectors in affinity terms use them).
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
#: The most pods one file may make: a what-if is a question, not a load test.
MAX_PODS = 10_000
#: Uids of what-if pods and objects start with this; nothing in a cluster is named so.
UID_PREFIX = "whatif-"
DRA_GROUP = "resource.k8s.io"

_WORKLOADS = {
    ("batch", "Job"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
}


class WhatIfError(ValueError):
    """The file cannot be answered for; the message names the document and the field."""


@dataclass(slots=True)
class GangObject:
    """A group object of the file, with the gang API it belongs to."""

    api: GangApi
    obj: dict[str, Any]
    info: PodGroupInfo

    @property
    def resource_id(self) -> str:
        assert self.api.resource is not None
        return self.api.resource.id


@dataclass(slots=True)
class WhatIfInput:
    #: Pod objects as the API server would store them, priority still to be resolved.
    pods: list[dict[str, Any]] = field(default_factory=list)
    gang_objects: list[GangObject] = field(default_factory=list)
    #: ResourceClaims of the file (JSON), and its ResourceClaimTemplates by ``namespace/name``.
    claims: list[dict[str, Any]] = field(default_factory=list)
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: What the file asks about, as users name it (``Job default/train``), in file order.
    sources: list[str] = field(default_factory=list)


def load_documents(text: str) -> list[dict[str, Any]]:
    """The objects of a YAML or JSON text (empty documents skipped, ``List`` items unfolded)."""
    try:
        stripped = text.lstrip()
        if stripped.startswith(("{", "[")):
            loaded = json.loads(text)
            raw: list[Any] = loaded if isinstance(loaded, list) else [loaded]
        else:
            raw = list(yaml.safe_load_all(text))
    except (ValueError, yaml.YAMLError) as error:
        raise WhatIfError(f"the file is neither YAML nor JSON: {error}") from None
    docs: list[dict[str, Any]] = []
    for position, doc in enumerate(raw, start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise WhatIfError(f"document {position}: an object is expected, got {_kind_of(doc)}")
        if doc.get("kind") == "List" or (
            isinstance(doc.get("kind"), str) and doc["kind"].endswith("List") and "items" in doc
        ):
            items = doc.get("items")
            if not isinstance(items, list):
                raise WhatIfError(f"document {position}: items: a list is expected")
            docs.extend(item for item in items if isinstance(item, dict))
            continue
        docs.append(doc)
    if not docs:
        raise WhatIfError("the file holds no object")
    return docs


def read_input(
    text: str, scheduler_names: Sequence[str] | None, apis: Sequence[GangApi] = GANG_APIS
) -> WhatIfInput:
    """The pods and gang objects of ``text``; raises :class:`WhatIfError`."""
    result = WhatIfInput()
    by_kind = {
        (api.resource.group, api.resource.kind): api for api in apis if api.resource is not None
    }
    for position, doc in enumerate(load_documents(text), start=1):
        api_version = doc.get("apiVersion")
        kind = doc.get("kind")
        if not isinstance(api_version, str) or not api_version:
            raise WhatIfError(f"document {position}: apiVersion: missing")
        if not isinstance(kind, str) or not kind:
            raise WhatIfError(f"document {position}: kind: missing")
        group = api_version.rpartition("/")[0]
        where = f"{kind} {_name_of(doc, position)}"
        if group == "" and kind == "Pod":
            result.pods.append(_pod_of(doc, where))
        elif (group, kind) in _WORKLOADS:
            result.pods.extend(_pods_of_workload(doc, kind, where))
        elif (group, kind) in by_kind:
            result.gang_objects.append(_gang_object(by_kind[(group, kind)], doc, where))
        elif group == DRA_GROUP and kind == "ResourceClaim":
            claim = copy.deepcopy(dict(doc))
            claim["metadata"] = _metadata(claim, where)
            if not claim["metadata"].get("name"):
                raise WhatIfError(f"{where}: metadata.name: missing")
            claim["metadata"].setdefault("namespace", "default")
            claim["status"] = {}
            result.claims.append(claim)
        elif group == DRA_GROUP and kind == "ResourceClaimTemplate":
            meta = _metadata(doc, where)
            if not meta.get("name"):
                raise WhatIfError(f"{where}: metadata.name: missing")
            template = doc.get("spec")
            if not isinstance(template, Mapping):
                raise WhatIfError(f"{where}: spec: an object is expected")
            result.templates[f"{meta.get('namespace') or 'default'}/{meta['name']}"] = dict(
                template
            )
        elif kind == "PodGroup" or group.startswith("scheduling."):
            known = ", ".join(
                f"{api.resource.api_version} {api.resource.kind}"
                for api in apis
                if api.resource is not None
            )
            raise WhatIfError(
                f"{where}: apiVersion: {api_version} {kind} is not a gang API koordgang reads "
                f"(it reads {known})"
            )
        else:
            raise WhatIfError(
                f"{where}: kind: {api_version} {kind} is neither a Pod, a Job, Deployment, "
                "ReplicaSet or StatefulSet, a gang object, nor a ResourceClaim or "
                "ResourceClaimTemplate"
            )
        result.sources.append(where)
        if len(result.pods) > MAX_PODS:
            raise WhatIfError(f"{where}: the file makes more than {MAX_PODS} pods")
    if not result.pods:
        raise WhatIfError(
            "the file makes no pod: give a Pod, or a Job, Deployment, ReplicaSet or "
            "StatefulSet (a gang object alone schedules nothing)"
        )
    for pod in result.pods:
        name = pod["spec"].get("schedulerName") or "default-scheduler"
        if scheduler_names is not None and name not in scheduler_names:
            meta = pod["metadata"]
            ours = " or ".join(repr(n) for n in scheduler_names)
            raise WhatIfError(
                f"pod {meta['namespace']}/{meta['name']}: spec.schedulerName: {name!r}; "
                f"koordgang schedules the pods that name {ours}"
            )
    return result


def _kind_of(value: Any) -> str:
    return type(value).__name__


def _name_of(doc: Mapping[str, Any], position: int) -> str:
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or meta.get("generateName") or f"(document {position})"
    namespace = meta.get("namespace") or "default"
    return f"{namespace}/{name}"


def _metadata(doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    meta = doc.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise WhatIfError(f"{where}: metadata: an object is expected")
    return meta


def _pod_of(doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    pod = copy.deepcopy(dict(doc))
    meta = _metadata(pod, where)
    pod["metadata"] = meta
    if not meta.get("name"):
        base = meta.get("generateName")
        if not base:
            raise WhatIfError(f"{where}: metadata.name: missing")
        meta["name"] = f"{base}whatif"
    meta.setdefault("namespace", "default")
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        raise WhatIfError(f"{where}: spec: an object is expected")
    # What the cluster would say of it now: not bound, not started.
    spec.pop("nodeName", None)
    pod["status"] = {"phase": "Pending"}
    return pod


def _count(spec: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = spec.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WhatIfError(f"{where}: spec.{key}: a whole number >= 0 is expected, got {value!r}")
    return value


def _pods_of_workload(doc: Mapping[str, Any], kind: str, where: str) -> list[dict[str, Any]]:
    meta = _metadata(doc, where)
    name = meta.get("name") or meta.get("generateName") or ""
    if not isinstance(name, str) or not name:
        raise WhatIfError(f"{where}: metadata.name: missing")
    name = name.rstrip("-")
    namespace = meta.get("namespace") or "default"
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        raise WhatIfError(f"{where}: spec: an object is expected")
    template = spec.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise WhatIfError(f"{where}: spec.template.spec: a pod template is expected")
    indexed = False
    if kind == "Job":
        parallelism = _count(spec, "parallelism", where, 1)
        completions = _count(spec, "completions", where, parallelism)
        count = min(parallelism, completions)
        indexed = spec.get("completionMode") == "Indexed"
    else:
        count = _count(spec, "replicas", where, 1)
    if count == 0:
        raise WhatIfError(f"{where}: makes no pod (its count is 0)")
    pods = []
    for index in range(count):
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": copy.deepcopy(dict(template.get("metadata") or {})),
            "spec": copy.deepcopy(dict(template["spec"])),
        }
        pod_meta = pod["metadata"]
        labels = pod_meta.setdefault("labels", {})
        annotations = pod_meta.setdefault("annotations", {})
        pod_meta["namespace"] = namespace
        pod_meta["ownerReferences"] = [
            {"apiVersion": doc.get("apiVersion"), "kind": kind, "name": name, "uid": "whatif"}
        ]
        if kind == "Job":
            for label in JOB_NAME_LABELS:
                labels.setdefault(label, name)
            if indexed:
                annotations[COMPLETION_INDEX] = str(index)
                labels[COMPLETION_INDEX] = str(index)
                pod["spec"].setdefault("hostname", f"{name}-{index}")
            pod_meta["name"] = f"{name}-{index}" if indexed else f"{name}-whatif-{index}"
        elif kind == "StatefulSet":
            pod_meta["name"] = f"{name}-{index}"
        else:
            pod_meta["name"] = f"{name}-whatif-{index}"
        pods.append(_pod_of(pod, f"{where} (pod {index})"))
    return pods


def _gang_object(api: GangApi, doc: Mapping[str, Any], where: str) -> GangObject:
    obj = copy.deepcopy(dict(doc))
    meta = _metadata(obj, where)
    obj["metadata"] = meta
    if not meta.get("name"):
        raise WhatIfError(f"{where}: metadata.name: missing")
    meta.setdefault("namespace", "default")
    meta["uid"] = f"{UID_PREFIX}{api.name}-{meta['namespace']}-{meta['name']}"
    info = api.parse(obj)
    if info.issues:
        # The daemon would fall back to defaults, or never start the gang: either way not
        # what the file says, so the question has no answer yet.
        raise WhatIfError(f"{where}: " + "; ".join(issue.message() for issue in info.issues))
    return GangObject(api, obj, info)


#: The claims of upstream PodGroup ``(namespace, name)``, None when not known: a what-if asks
#: its framework (``Framework.podgroup_claims``), told of the cluster's PodGroups and the file's.
PodGroupLookup = Callable[[str, str], PodGroupClaims | None]


def _no_podgroups(namespace: str, name: str) -> PodGroupClaims | None:
    return None


def _group_of(
    pod: Mapping[str, Any], ref: PodClaimRef, groups: PodGroupLookup
) -> PodGroupClaims | None:
    """The PodGroup whose claim the pod's entry ``ref`` is (its PodGroup names the same entry,
    same claim or template, as the resourceclaim controller decides it); None: the pod's own."""
    scheduling = pod["spec"].get("schedulingGroup")
    name = scheduling.get("podGroupName") if isinstance(scheduling, Mapping) else None
    group = groups(pod["metadata"]["namespace"], name) if isinstance(name, str) and name else None
    return group if group is not None and group.binds(ref) else None


def make_pods(
    pods: Sequence[dict[str, Any]],
    priorities: Mapping[str, int],
    now: float,
    groups: PodGroupLookup = _no_podgroups,
) -> list[PodInfo]:
    """The pods as the scheduler would read them once created now, in file order: uids of
    their own, ``spec.priority`` from their PriorityClass (``priorities``: name -> value; ""
    is the class a pod without one gets). A pod's template entry that is its PodGroup's
    (``groups``) names the PodGroup's claim: the one made for it (its status names it), or the
    one ``make_claims`` makes for it. Raises :class:`WhatIfError` naming the field."""
    made: list[PodInfo] = []
    stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for position, raw in enumerate(pods):
        pod = copy.deepcopy(raw)
        meta, spec = pod["metadata"], pod["spec"]
        where = f"pod {meta['namespace']}/{meta['name']}"
        meta["uid"] = f"{UID_PREFIX}{position}"
        meta["creationTimestamp"] = stamp
        made_claims = {}
        for entry in spec.get("resourceClaims") or ():
            if isinstance(entry, Mapping) and entry.get("resourceClaimTemplateName"):
                ref = PodClaimRef(
                    str(entry["name"]), template_name=str(entry["resourceClaimTemplateName"])
                )
                group = _group_of(pod, ref, groups)
                if group is None:
                    made_claims[ref.name] = f"{meta['name']}-{ref.name}-whatif"
                elif ref.name in group.made:
                    made_claims[ref.name] = group.made[ref.name]
                else:
                    made_claims[ref.name] = f"{group.name}-{ref.name}-whatif"
        if made_claims:
            # As the resourceclaim controller names the claims it made for the pod.
            pod["status"]["resourceClaimStatuses"] = [
                {"name": entry, "resourceClaimName": claim} for entry, claim in made_claims.items()
            ]
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        if spec.get("priority") is None:
            class_name = spec.get("priorityClassName") or ""
            if not isinstance(class_name, str):
                raise WhatIfError(f"{where}: spec.priorityClassName: a name is expected")
            if class_name in priorities:
                spec["priority"] = priorities[class_name]
            elif class_name:
                raise WhatIfError(
                    f"{where}: spec.priorityClassName: PriorityClass {class_name!r} does not exist"
                )
        try:
            made.append(parse_pod(pod))
        except ModelError as error:
            raise WhatIfError(f"{where}: {error}") from None
    return made


def priority_class_names(pods: Sequence[dict[str, Any]]) -> set[str]:
    """The PriorityClasses the pods name (whose values the caller looks up)."""
    names = set()
    for pod in pods:
        name = pod["spec"].get("priorityClassName")
        if isinstance(name, str) and name and pod["spec"].get("priority") is None:
            names.add(name)
    return names


def priorities_of(classes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """PriorityClass objects as name -> value; "" -> the value of the global default, if a
    class is marked so (the API server's admission gives it to pods naming none)."""
    values: dict[str, int] = {}
    for obj in classes:
        name = (obj.get("metadata") or {}).get("name")
        value = obj.get("value")
        if isinstance(name, str) and isinstance(value, int) and not isinstance(value, bool):
            values[name] = value
            if obj.get("globalDefault") is True:
                values[""] = value
    return values


def make_claims(
    parsed: WhatIfInput, pods: Sequence[PodInfo], groups: PodGroupLookup = _no_podgroups
) -> list[ResourceClaimInfo]:
    """The file's ResourceClaims, and one claim per pod and template entry, made from the
    file's template as the resourceclaim controller makes it (owned by the pod, named as
    ``make_pods`` told the pod); for an entry that is a PodGroup's (``groups``), one claim for
    the whole PodGroup, owned by it, unless the controller made it already (it is the
    cluster's). Raises :class:`WhatIfError` naming a template the file does not hold, or a
    claim it cannot read."""
    made: list[ResourceClaimInfo] = []
    names: set[str] = set()
    for claim in parsed.claims:
        meta = claim["metadata"]
        meta["uid"] = f"{UID_PREFIX}claim-{meta['namespace']}-{meta['name']}"
        made.append(_claim(claim, f"ResourceClaim {meta['namespace']}/{meta['name']}"))
    for pod in pods:
        for ref in pod.resource_claims:
            if not ref.template_name:
                continue
            group = groups(pod.namespace, pod.scheduling_group) if pod.scheduling_group else None
            if group is not None and not group.binds(ref):
                group = None
            if group is not None and ref.name in group.made:
                continue  # made for the PodGroup already: the cluster's claim
            key = f"{pod.namespace}/{ref.template_name}"
            template = parsed.templates.get(key)
            where = f"pod {pod.key}: spec.resourceClaims[{ref.name}]"
            if template is None:
                raise WhatIfError(
                    f"{where}: ResourceClaimTemplate {key} is not in the file (the what-if "
                    "makes claims from the templates the file holds)"
                )
            name = pod.claim_statuses.get(ref.name) or f"{pod.name}-{ref.name}-whatif"
            if name in names:
                continue  # the PodGroup's, made for an earlier member
            names.add(name)
            owner = {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid}
            if group is not None:
                owner = {
                    "apiVersion": f"{UPSTREAM_GROUP}/v1beta1",
                    "kind": "PodGroup",
                    "name": group.name,
                    "uid": group.uid,
                }
            claim = {
                "metadata": {
                    "name": name,
                    "namespace": pod.namespace,
                    "uid": f"{UID_PREFIX}claim-{pod.namespace}-{name}",
                    "ownerReferences": [{**owner, "controller": True}],
                },
                "spec": copy.deepcopy(dict(template.get("spec") or {})),
                "status": {},
            }
            made.append(_claim(claim, f"{where} (template {key})"))
    return made


def _claim(obj: Mapping[str, Any], where: str) -> ResourceClaimInfo:
    try:
        info = parse_resource_claim(obj)
    except ModelError as error:
        raise WhatIfError(f"{where}: {error}") from None
    if info.problem:
        raise WhatIfError(f"{where}: {info.problem}")
    return info
