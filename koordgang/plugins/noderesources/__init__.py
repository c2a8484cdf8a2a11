"""Resource fit (cpu, memory, ephemeral storage, extended resources, pod count) and scoring."""

from koordgang.plugins.noderesources.fit import Fit
from koordgang.plugins.noderesources.scoring import ResourceScore

__all__ = ["Fit", "ResourceScore"]
