"""What the group extension points answer, beyond a Status."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from koordgang.framework.prebind import ObjectWrite
from koordgang.framework.status import Status
from koordgang.state.snapshot import Placement


@dataclass(slots=True)
class PostFilterResult:
    status: Status
    #: pod uid -> node held for it while room is being made (preemption's nominations).
    nominated: dict[str, str] = field(default_factory=dict)
    #: Give up everything placed in this cycle (a Strict gang that cannot be satisfied).
    drop_placements: bool = False
    #: pod uid -> what that pod is told about why it waits.
    messages: dict[str, str] = field(default_factory=dict)
    #: pod uid -> a note added to what the pod is told (what preemption did, or why not);
    #: on success, the note alone is what the pod is told.
    notes: dict[str, str] = field(default_factory=dict)
    #: Pods to evict to make the room (preemption's victims), with their node.
    evict: list[Placement] = field(default_factory=list)
    #: Whom the victims make room for, as users read it (``default/hello-job``).
    preemptor: str = ""
    #: Why they go, as their ``DisruptionTarget`` condition says it ("": preemption's words,
    #: "preempting to accommodate higher priority pods").
    eviction_why: str = ""
    #: Pods of other groups whose nominations on the freed nodes are given up.
    drop_nominations: list[str] = field(default_factory=list)
    #: A preemption dry run ran: how long it took (seconds), for the metrics.
    dry_run_seconds: float | None = None
    #: Writes that may let the group fit next time, made whatever the cycle decides (claims
    #: allocated where their pods no longer fit, given back).
    writes: tuple[ObjectWrite, ...] = ()


@dataclass(frozen=True, slots=True)
class ProvisioningVerdict:
    """What an autoscaler can do for a group that does not fit: nothing, here (the room it
    lacks is beyond what the autoscaler may add). ``reason`` replaces ``Unschedulable`` on the
    members' PodScheduled condition, which is what autoscalers act on; ``note`` is added to
    what each member is told."""

    reason: str
    note: str


@dataclass(frozen=True, slots=True)
class HoldPreview:
    """What a group that stays pending, with nothing to evict for it, would hold once it has
    waited ``after_seconds``: nodes for its members (``nominations``: uid -> node), and the
    pods there it would wait for (``blockers``: uid -> node). The what-if asks."""

    after_seconds: float
    nominations: Mapping[str, str]
    blockers: Mapping[str, str]

    @property
    def nodes(self) -> set[str]:
        return set(self.nominations.values())


class UnreserveReason(enum.StrEnum):
    """Why placements held or being bound were given up (what Unreserve is told)."""

    #: The group's deadline came before its Permit allowed it.
    TIMEOUT = "timeout"
    #: Permit rejected the group, or it was given up after failing again (Strict).
    REJECTED = "rejected"
    #: A Reserve plugin failed.
    RESERVE_FAILED = "reserve failed"
    #: The node of a held placement went away.
    NODE_GONE = "node deleted"
    #: The binding failed.
    BIND_FAILED = "bind failed"


class Decision(enum.Enum):
    ALLOW = "allow"
    WAIT = "wait"
    REJECT = "reject"


@dataclass(slots=True)
class PermitResult:
    decision: Decision
    #: WAIT: when held placements are given up if the group is still not allowed (monotonic
    #: clock); the deadline of a group already waiting is kept by giving it again.
    deadline: float | None = None
    #: pod uid -> what that pod is told (pods placed now, pods already held, pods left over).
    messages: dict[str, str] = field(default_factory=dict)
    #: ALLOW: placements held in earlier cycles that may bind now too (by pod uid).
    also_allow: tuple[str, ...] = ()
    plugin: str = ""


ALLOW = PermitResult(Decision.ALLOW)
