"""Dynamic Resource Allocation state: the DRA manager (devices, classes, claims, taint rules,
what is in use), the pools its devices come from, each snapshot's claim view, and the
claims of upstream PodGroups."""

from koordgang.state.dra.manager import DraManager
from koordgang.state.dra.podgroups import PodGroupClaimStore
from koordgang.state.dra.pools import Device, Pool
from koordgang.state.dra.view import ClaimView

__all__ = ["ClaimView", "Device", "DraManager", "PodGroupClaimStore", "Pool"]
