"""The default plugin set (kube-scheduler calls it a profile)."""

from __future__ import annotations

import random

from koordgang.framework.framework import Framework, PluginFactory
from koordgang.plugins.coscheduling import Coscheduling
from koordgang.plugins.dynamicresources import DynamicResources
from koordgang.plugins.interpodaffinity import InterPodAffinity
from koordgang.plugins.networktopology import NetworkTopology
from koordgang.plugins.nodeaffinity import NodeAffinity
from koordgang.plugins.nodepools import NodePools
from koordgang.plugins.nodeports import NodePorts
from koordgang.plugins.noderesources import Fit, ResourceScore
from koordgang.plugins.nodeunschedulable import NodeUnschedulable
from koordgang.plugins.podtopologyspread import PodTopologySpread
from koordgang.plugins.preemption import Preemption
from koordgang.plugins.schedulinggates import SchedulingGates
from koordgang.plugins.starttimes import StartTimes
from koordgang.plugins.starvationguard import StarvationGuard
from koordgang.plugins.tainttoleration import TaintToleration
from koordgang.plugins.volumebinding import VolumeBinding
from koordgang.settings import Settings
from koordgang.state.gangs import GangRegistry
from koordgang.state.network_topology import ClusterTopology


def default_framework(
    settings: Settings,
    gangs: GangRegistry,
    rng: random.Random | None = None,
    topology: ClusterTopology | None = None,
) -> Framework:
    """Gang scheduling, kube-scheduler's filters and scores (with its default weights), in the
    order they run: each plugin takes part at every extension point it implements; cheap
    static checks first, filters that look at other pods last. Each entry makes its plugin
    from the framework's handle. ``gangs`` and ``topology`` are the state the plugins share
    with the engine's status controllers (a topology of its own when none is given)."""
    cluster_topology = topology if topology is not None else ClusterTopology()
    profile: tuple[PluginFactory, ...] = (
        # Gates first: a gated pod hears about its gates, not about its gang.
        SchedulingGates,
        lambda handle: Coscheduling(handle, gangs),
        # Places gang groups that carry a network-topology spec inside one domain.
        lambda handle: NetworkTopology(handle, cluster_topology),
        lambda handle: VolumeBinding(
            lambda namespace, name: handle.stores.volume_claims.claim(namespace, name)
        ),
        lambda _: NodeUnschedulable(),
        lambda _: NodeAffinity(),
        lambda _: TaintToleration(),
        lambda _: NodePorts(),
        Fit,
        # Devices after room: a node short of cpu says so, and only nodes with room run the
        # device search.
        lambda handle: DynamicResources(handle, binding_timeout=settings.dra_binding_timeout),
        lambda _: PodTopologySpread(),
        lambda handle: InterPodAffinity(
            namespace_labels=lambda name: handle.stores.namespaces.labels(name)
        ),
        lambda _: ResourceScore(settings.score_strategy),
        # After Coscheduling: a gang's own explanation comes first, then what preemption did
        # about it.
        lambda handle: Preemption(handle, enabled=settings.preemption),
        # After Preemption: a job waits for room only where none can be made by evicting.
        lambda handle: StarvationGuard(
            handle,
            scheduler_names=settings.scheduler_names,
            reserve_after=settings.reserve_after,
            max_reserving=settings.max_reserving_jobs,
            default_waiting_time=settings.default_gang_waiting_time,
            reclaim=settings.reclaim_lent_room,
        ),
        # After every plugin that may make or hold room: a job still waiting hears when it
        # starts if the pods holding its room end by their time limits.
        StartTimes,
        # Last: members still without room ask an autoscaler for it only where it may add it.
        lambda _: NodePools(),
    )
    return Framework(
        profile,
        waiting=gangs.waiting,
        rng=rng,
    )
