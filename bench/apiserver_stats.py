"""What the API server did in a scenario's window, from its own ``/metrics`` read just before
the scheduler starts and just after the window ends (each read is outside the window): the
requests it answered, by verb and resource, from every client (the scheduler, kwok, the bench's
watch), and how much of its CPU went to Go's garbage collector. Where the API server's CPU per
bound pod differs between runs or schedulers, this says whether it was more requests or more
collecting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bench.cluster import BenchCluster

#: The request counter, and the runtime's CPU classes (Go 1.20+, exported by the API server).
REQUESTS = "apiserver_request"
#: The runtime's estimate of the CPU its collector used (background marking, assists, pauses).
GC_CPU = "go_cpu_classes_gc_total_cpu_seconds"
GC_CYCLES = "go_gc_cycles_total_gc_cycles"
_RUNTIME = (GC_CPU, GC_CYCLES)
#: Seconds a read may take (about 14,000 lines): past it the window simply has no figures.
READ_TIMEOUT = 10.0
#: Keys of ``window`` that are not requests.
GC_CPU_KEY = "gc cpu s"
GC_CYCLES_KEY = "gc cycles"


def parse(text: str) -> dict[str, float]:
    """``verb resource[/subresource]`` -> requests so far, and the runtime counters by name.
    Requests for no resource (``/metrics``, ``/healthz``) are left out: the bench's own reads
    of this endpoint would count in the window otherwise."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == REQUESTS:
            for sample in family.samples:
                if not sample.name.endswith("_total"):
                    continue
                resource = sample.labels.get("resource", "")
                if not resource:
                    continue
                sub = sample.labels.get("subresource", "")
                key = f"{sample.labels.get('verb', '')} {resource}" + (f"/{sub}" if sub else "")
                values[key] = values.get(key, 0.0) + sample.value
        elif family.name in _RUNTIME:
            values[family.name] = sum(s.value for s in family.samples)
    return values


async def read(cluster: BenchCluster) -> dict[str, float]:
    """The counters now; empty when the API server does not answer (the figures are extras)."""
    try:
        status, body = await cluster.get_raw("/metrics", "text/plain", READ_TIMEOUT)
    except (aiohttp.ClientError, TimeoutError):
        return {}
    if status >= 400:
        return {}
    return parse(body.decode(errors="replace"))


def window(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """What changed between two reads: requests by kind (only those made), the collector's
    CPU seconds and its cycles."""
    if not before or not after:
        return {}
    delta = {key: after[key] - before.get(key, 0.0) for key in after}
    out = {key: value for key, value in sorted(delta.items()) if key not in _RUNTIME and value > 0}
    if GC_CPU in delta:
        out[GC_CPU_KEY] = round(delta[GC_CPU], 3)
    if GC_CYCLES in delta:
        out[GC_CYCLES_KEY] = delta[GC_CYCLES]
    return out


def summary(stats: Mapping[str, float], bound: int, top: int = 6) -> str:
    """One line: the collector's cycles and CPU, and the most frequent requests (per bound
    pod when pods were bound)."""
    parts: list[str] = []
    if GC_CYCLES_KEY in stats:
        parts.append(f"{stats[GC_CYCLES_KEY]:g} GC cycles")
    if GC_CPU_KEY in stats:
        parts.append(f"GC {stats[GC_CPU_KEY]:.2f} CPU s")
    requests: Sequence[tuple[str, float]] = sorted(
        ((k, v) for k, v in stats.items() if k not in (GC_CPU_KEY, GC_CYCLES_KEY)),
        key=lambda kv: -kv[1],
    )
    for key, count in requests[:top]:
        per_pod = f" ({count / bound:.2f}/pod)" if bound else ""
        parts.append(f"{key} {count:g}{per_pod}")
    return ", ".join(parts)
