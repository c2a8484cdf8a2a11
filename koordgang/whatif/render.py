"""The what-if answer for people: one paragraph per scheduling group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_HEADLINES = {
    "bind": "fits now: bound at once",
    "hold": "partly fits: placed members are held while the gang waits for the rest",
    "preempt": "does not fit now; preemption would make room",
    "reserve": "does not fit now; nodes would be reserved for it",
    "pending": "does not fit now: stays pending",
    "gated": "would not be tried: kept out of the queue",
}


def render_text(answer: Mapping[str, Any]) -> str:
    lines: list[str] = []
    sources = answer.get("sources") or []
    if sources:
        lines.append(f"asked about: {', '.join(sources)} ({answer.get('pods', 0)} pods)")
    verdict = "yes" if answer.get("fits") else "no"
    lines.append(f"fits now: {verdict}")
    for group in answer.get("groups") or []:
        lines.append("")
        lines.extend(_group(group))
    warnings = answer.get("warnings") or []
    if warnings:
        lines.append("")
        lines.append("warnings:")
        lines.extend(f"  {w}" for w in warnings)
    return "\n".join(lines)


def _group(group: Mapping[str, Any]) -> list[str]:
    gangs = group.get("gangs") or []
    pods = group.get("pods") or []
    title = f"gang {', '.join(gangs)}" if gangs else f"pod {', '.join(pods)}"
    outcome = str(group.get("outcome", ""))
    lines = [f"{title} ({len(pods)} pods): {_HEADLINES.get(outcome, outcome)}"]
    others = group.get("others") or []
    if others:
        lines.append(f"  with {len(others)} pending pods already in the cluster")
    if group.get("domain"):
        lines.append(f"  domain: {group['domain']}")
    placements: Mapping[str, str] = group.get("placements") or {}
    if placements:
        lines.extend(_by_node(placements))
    devices: Mapping[str, list[str]] = group.get("devices") or {}
    if devices:
        lines.append("  devices (node: driver/pool/device):")
        for pod, found in sorted(devices.items()):
            lines.append(f"    {pod}: {', '.join(found)}")
    for claim in group.get("podGroupClaims") or []:
        lines.append(f"  claim: {claim}")
    if group.get("holdSeconds") is not None:
        lines.append(f"  held for at most {group['holdSeconds']:g}s")
    short: Mapping[str, str] = group.get("short") or {}
    if short:
        needs = ", ".join(f"{amount} {name}" for name, amount in short.items())
        lines.append(f"  short: the members that found no node ask for {needs}")
    evict = group.get("evict") or []
    if evict:
        cost = group.get("evictionCost") or ""
        lines.append(f"  would evict ({cost}), in eviction order:")
        for victim in evict:
            job = f", job {victim['job']}" if victim.get("job") != victim.get("pod") else ""
            lines.append(
                f"    {victim['pod']} on {victim['node']} (priority {victim['priority']}{job})"
            )
    reservation = group.get("reservation")
    nominated: Mapping[str, str] = group.get("nominated") or {}
    if reservation:
        after = reservation.get("afterSeconds")
        when = f"after {after:g}s without fitting, " if after is not None else ""
        lines.append(
            f"  {when}it would hold (nothing evicted; the pods there finish on their own):"
        )
        lines.extend(_by_node(reservation.get("nominated") or {}, indent="    "))
        for blocker in reservation.get("waitingFor") or []:
            lines.append(
                f"    waits for {blocker['pod']} on {blocker['node']} "
                f"(running {blocker['runningSeconds']}s)"
            )
    elif nominated:
        lines.append("  then nominated:")
        lines.extend(_by_node(nominated, indent="    "))
    for note in group.get("notes") or []:
        lines.append(f"  why: {note}")
    # Where the daemon may choose otherwise among equal choices: said last, as what qualifies
    # the nodes and victims above.
    ties = group.get("ties") or []
    if ties:
        lines.append("  ties:")
        lines.extend(f"    {tie}" for tie in ties)
    return lines


def _by_node(placements: Mapping[str, str], indent: str = "  ") -> list[str]:
    by_node: dict[str, list[str]] = {}
    for pod, node in placements.items():
        by_node.setdefault(node, []).append(pod)
    return [f"{indent}{node}: {', '.join(sorted(pods))}" for node, pods in sorted(by_node.items())]
