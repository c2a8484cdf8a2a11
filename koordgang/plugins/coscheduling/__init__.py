"""Gang scheduling: queue order that keeps gangs together, group readiness checks, and the
placement of a whole GangGroup as one decision over one snapshot."""

from koordgang.plugins.coscheduling.planner import GangPlan, GroupPlan, plan_group
from koordgang.plugins.coscheduling.readiness import GroupVerdict, check_group
from koordgang.plugins.coscheduling.sort import GangSort

__all__ = ["GangPlan", "GangSort", "GroupPlan", "GroupVerdict", "check_group", "plan_group"]
