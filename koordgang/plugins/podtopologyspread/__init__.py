"""Pod topology spread constraints: DoNotSchedule ones filter nodes, ScheduleAnyway ones score."""

from koordgang.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
