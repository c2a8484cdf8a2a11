"""Gang scheduling: queue order that keeps gangs together, whole GangGroups per cycle, group
readiness and minResources, all-or-nothing Permit, Strict and NonStrict, timeouts, PodGroup
status."""

from koordgang.plugins.coscheduling.plugin import Coscheduling, member_order

__all__ = ["Coscheduling", "member_order"]
