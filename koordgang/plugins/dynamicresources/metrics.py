"""The metrics the DynamicResources plugin feeds (the engine registers them)."""

from __future__ import annotations

from koordgang.framework.report import MetricSpec

ALLOCATIONS = "koordgang_dra_allocations_total"
ALLOCATION_SECONDS = "koordgang_dra_allocation_seconds"
CONFLICTS = "koordgang_dra_conflicts_total"
DEVICES = "koordgang_dra_devices"
CLAIMS = "koordgang_dra_claims"
INVALID_POOLS = "koordgang_dra_invalid_pools"
TAINTED = "koordgang_dra_tainted_devices"
ADMIN = "koordgang_dra_admin_devices"
METRICS = (
    MetricSpec(
        DEVICES,
        "Devices of node-local pools, by state (free, in use, double: held by two claims).",
        "gauge",
        label="state",
    ),
    MetricSpec(
        CLAIMS,
        "ResourceClaims by state (allocated; assumed: allocated here, not seen written; "
        "waiting: not allocated).",
        "gauge",
        label="state",
    ),
    MetricSpec(INVALID_POOLS, "Resource pools skipped as invalid (duplicate devices).", "gauge"),
    MetricSpec(
        TAINTED,
        "Devices of node-local pools with a NoSchedule or NoExecute taint (their slice's, or "
        "a DeviceTaintRule's): allocated only to requests that tolerate it.",
        "gauge",
    ),
    MetricSpec(
        ADMIN,
        "Devices allocated for admin access (monitoring): they stay free for workloads.",
        "gauge",
    ),
    MetricSpec(ALLOCATIONS, "Claims allocated by the scheduler (devices chosen).", "counter"),
    MetricSpec(
        ALLOCATION_SECONDS,
        "Time to choose the devices of one pod's claims on the node it goes to.",
        "histogram",
        buckets=(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5),
    ),
    MetricSpec(
        CONFLICTS,
        "Batches given up before binding because a device they were given was allocated to "
        "another claim meanwhile (another scheduler).",
        "counter",
    ),
)
