"""Dynamic Resource Allocation (``resource.k8s.io/v1``) as far as the scheduler needs it.

A node's driver publishes its devices in ResourceSlices; a DeviceClass selects devices by CEL
and may carry configuration for them; a pod asks through ``spec.resourceClaims`` for
ResourceClaims (named, or made from a template by the resourceclaim controller, which names
them in the pod's ``status.resourceClaimStatuses``). The scheduler picks the devices, writes
them into the claim's ``status.allocation`` with the pod in ``status.reservedFor``, and only
then binds.

Everything here parses API objects into frozen values; nothing decides anything. Features of
the pinned release that koordgang does not allocate yet are recorded as a reason on what
carries them (``unsupported``), so that the allocator leaves such devices alone and a request
that needs one waits with a message naming the feature.
"""

from koordgang.model.dra.base import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT,
    API_VERSION,
    CLAIM_FINALIZER,
    MAX_ALLOCATED_DEVICES,
    MAX_RESERVED_FOR,
    DeviceId,
)
from koordgang.model.dra.claims import (
    AllocatedDevice,
    ClaimAllocation,
    ClaimConfig,
    ClaimSpec,
    Consumer,
    DeviceConstraint,
    DeviceRequest,
    ResourceClaimInfo,
    SubRequest,
    claim_spec,
    node_local_selector,
    parse_resource_claim,
)
from koordgang.model.dra.extended import (
    DEVICE_CLASS_PREFIX,
    EXTENDED_CLAIM_ANNOTATION,
    EXTENDED_CLAIM_SUFFIX,
    ContainerRequests,
    ExtendedRequest,
    RequestMapping,
    is_pending_key,
    may_be_extended,
    pending_key,
    requests_and_mappings,
)
from koordgang.model.dra.podgroups import PodGroupClaims, parse_podgroup_claims
from koordgang.model.dra.pods import PodClaimRef, parse_pod_claims
from koordgang.model.dra.slices import (
    AttributeValue,
    DeviceClassInfo,
    ResourceSliceInfo,
    SliceDevice,
    parse_device_class,
    parse_resource_slice,
)
from koordgang.model.dra.taint_rules import DeviceTaintRuleInfo, parse_device_taint_rule
from koordgang.model.dra.taints import DeviceTaint, DeviceToleration, untolerated

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT",
    "API_VERSION",
    "CLAIM_FINALIZER",
    "DEVICE_CLASS_PREFIX",
    "EXTENDED_CLAIM_ANNOTATION",
    "EXTENDED_CLAIM_SUFFIX",
    "MAX_ALLOCATED_DEVICES",
    "MAX_RESERVED_FOR",
    "AllocatedDevice",
    "AttributeValue",
    "ClaimAllocation",
    "ClaimConfig",
    "ClaimSpec",
    "Consumer",
    "ContainerRequests",
    "DeviceClassInfo",
    "DeviceConstraint",
    "DeviceId",
    "DeviceRequest",
    "DeviceTaint",
    "DeviceTaintRuleInfo",
    "DeviceToleration",
    "ExtendedRequest",
    "PodClaimRef",
    "PodGroupClaims",
    "RequestMapping",
    "ResourceClaimInfo",
    "ResourceSliceInfo",
    "SliceDevice",
    "SubRequest",
    "claim_spec",
    "is_pending_key",
    "may_be_extended",
    "node_local_selector",
    "parse_device_class",
    "parse_device_taint_rule",
    "parse_pod_claims",
    "parse_podgroup_claims",
    "parse_resource_claim",
    "parse_resource_slice",
    "pending_key",
    "requests_and_mappings",
    "untolerated",
]
