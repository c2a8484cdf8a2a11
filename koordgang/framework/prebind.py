"""PreBind: writes that must land before pods bind, as data.

kube-scheduler's PreBind writes, per pod, what a kubelet needs before the pod may run there (a
device allocation in a ResourceClaim, say). Here a plugin describes those writes for a batch of
placements (a gang's members bind together) and the engine carries them out: every write of the
batch first, then the bindings; if any write fails, what the batch wrote is undone, nothing is
bound, and the pods are tried again.

A write is a chain of patches to one object, each guarded by the object's ``resourceVersion``
(the one the decision was made on, then the one each patch returned): if anyone else changed the
object in between, the API server refuses it and nothing is overwritten. A write may also make
its object first (undone by deleting it), with writes of other objects that name the object
made (``then``), or delete it after its patches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.model.objects import ObjectRef


@dataclass(frozen=True, slots=True)
class PatchStep:
    """One merge patch of the object (``subresource`` "") or of its ``status``, and the patch
    that takes it back; the engine adds ``metadata.resourceVersion`` to both."""

    patch: Mapping[str, Any]
    undo: Mapping[str, Any] | None = None
    subresource: str = ""
    #: What it does, for logs and messages (``add finalizer``, ``write allocation``).
    what: str = ""


@dataclass(frozen=True, slots=True)
class ObjectWrite:
    obj: ObjectRef
    #: The object's path (``/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/x``).
    path: str
    #: The ``resourceVersion`` the decision was made on.
    resource_version: str
    #: Applied in order; when the batch is given up, the undo of each step that landed is
    #: applied, last first, on the version the last landed patch returned.
    steps: tuple[PatchStep, ...]
    #: The pods (uids) whose binding needs it.
    pods: tuple[str, ...] = ()
    #: The object to make first: POSTed to ``path`` (its collection; the API server names it
    #: from ``metadata.generateName``), then ``steps`` patch it; undoing deletes it.
    create: Mapping[str, Any] | None = field(default=None, compare=False)
    #: Writes of other objects that name the object made, given its name; made after it,
    #: undone before it.
    then: Callable[[str], tuple[ObjectWrite, ...]] | None = field(default=None, compare=False)
    #: Deletes the object after ``steps`` (one gone already counts as deleted); never undone.
    delete: bool = False

    @property
    def label(self) -> str:
        kind = self.obj.kind
        return f"{kind} {self.obj.namespace}/{self.obj.name}" if kind else self.path


@dataclass(frozen=True, slots=True)
class WaitOutcome:
    """How a wait after the writes ended: ``failure`` "" when the batch may bind, else why
    not; ``versions`` (object path -> resourceVersion) of written objects that others changed
    meanwhile, which the undo is to be guarded by instead."""

    failure: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)


#: Waits, after every write landed and before the bindings, for what others do with the
#: objects written (a driver preparing a device); the engine awaits it off the scheduling loop.
PreBindWait = Callable[[], Awaitable[WaitOutcome]]


@dataclass(frozen=True, slots=True)
class PreBindPlan:
    """What to write before a batch of placements binds (nothing, for most pods), or why the
    batch may not bind now."""

    writes: tuple[ObjectWrite, ...] = ()
    #: pod uid -> why it may not bind (a device it was given is held by another claim now);
    #: any refusal gives up the whole batch.
    refused: Mapping[str, str] = field(default_factory=dict)
    #: Awaited in order once the writes landed; the first failure gives the batch up.
    waits: tuple[PreBindWait, ...] = field(default=(), compare=False)

    @property
    def empty(self) -> bool:
        return not self.writes and not self.refused and not self.waits


NO_WRITES = PreBindPlan()
