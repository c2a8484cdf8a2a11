"""Dynamic Resource Allocation state: the DRA manager (devices, classes, claims, taint rules,
what is in use), the pools its devices come from, and each snapshot's claim view."""

from koordgang.state.dra.manager import DraManager
from koordgang.state.dra.pools import Device, Pool
from koordgang.state.dra.view import ClaimView

__all__ = ["ClaimView", "Device", "DraManager", "Pool"]
