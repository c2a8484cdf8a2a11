"""Dynamic Resource Allocation: devices for ResourceClaims, chosen in every placement."""

from koordgang.plugins.dynamicresources.plugin import DynamicResources

__all__ = ["DynamicResources"]
