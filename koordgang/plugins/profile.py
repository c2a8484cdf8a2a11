"""The default plugin set (kube-scheduler calls it a profile)."""

from __future__ import annotations

import random

from koordgang.framework.runner import Framework
from koordgang.plugins.coscheduling import GangSort
from koordgang.plugins.nodeaffinity import NodeAffinity
from koordgang.plugins.noderesources import Fit, ResourceScore
from koordgang.plugins.nodeunschedulable import NodeUnschedulable
from koordgang.plugins.tainttoleration import TaintToleration
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry


def default_framework(
    settings: Settings, gangs: GangRegistry, rng: random.Random | None = None
) -> Framework:
    """Gang-aware queue order (pods outside gangs keep PrioritySort's order), the node filters,
    and resource scoring."""
    return Framework(
        GangSort(gangs),
        pre_filters=(),
        # Cheap, static checks first; the resource fit last (it is the only one per pod).
        filters=(NodeUnschedulable(), NodeAffinity(), TaintToleration(), Fit()),
        scores=(ResourceScore(settings.score_strategy),),
        rng=rng,
    )
