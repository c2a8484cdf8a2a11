"""Each peer's KubeSchedulerConfiguration: the profile its release ships (koord-scheduler's with
job-level preemption and network-topology placement switched on where a scenario asks for them),
pointed at the bench's API server, with leader election off and, when asked, the client's QPS
and burst raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bench.workload import SCHEDULER
from controlplane.releases import selected_release

API_VERSION = "kubescheduler.config.k8s.io/v1"
#: Where each release keeps the configuration it ships, under its module's source.
SHIPPED = {
    "coscheduling": "manifests/coscheduling/scheduler-config.yaml",
    "koord-scheduler": "config/manager/scheduler-config.yaml",
}
#: The key of the ConfigMap holding koord-scheduler's configuration.
KOORD_CONFIG_KEY = "koord-scheduler-config"
#: koord-scheduler's Coscheduling arguments that switch on what its release has but does not
#: ship switched on: job-level preemption of gangs (a PostFilter of Coscheduling) and gang
#: placement along a ClusterNetworkTopology (with ``KOORD_FLAGS``).
KOORD_COSCHEDULING_ARGS: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "CoschedulingArgs",
    "enablePreemption": True,
    "awareNetworkTopology": True,
}
#: With job-level preemption on, Coscheduling must be the last PostFilter that preempts: the
#: framework runs the next one when it fails, and DefaultPreemption would then evict for a
#: single member. ElasticQuota's (off with no quotas) goes too.
KOORD_POST_FILTER: dict[str, Any] = {
    "disabled": [{"name": "*"}],
    "enabled": [{"name": "Reservation"}, {"name": "Coscheduling"}],
}
#: The network-topology tree is built only with this flag; without it a gang asking for
#: gathering is refused ("no cluster network topology").
KOORD_FLAGS = ("--enable-network-topology-manager=true",)


def shipped_config(peer: str, source: Path | None) -> dict[str, Any]:
    """The release's own configuration (kube-scheduler: the defaults, one profile)."""
    if peer == "kube-scheduler" or source is None:
        return {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration", "profiles": [{}]}
    document = yaml.safe_load((source / SHIPPED[peer]).read_text())
    if document.get("kind") == "ConfigMap":
        document = yaml.safe_load(document["data"][KOORD_CONFIG_KEY])
    if not isinstance(document, dict):
        raise ValueError(f"{peer}: no configuration in {source / SHIPPED[peer]}")
    return document


def bench_config(
    peer: str,
    source: Path | None,
    kubeconfig: Path,
    qps: int | None,
    *,
    job_features: bool = False,
) -> dict[str, Any]:
    """``shipped_config`` for the bench: every profile picks up the pods the bench creates
    (``schedulerName: koord-scheduler``, as koordgang's do), so all schedulers see the same pods.
    ``job_features``: koord-scheduler's job-level preemption and topology placement on."""
    config = shipped_config(peer, source)
    config["leaderElection"] = {"leaderElect": False}
    connection: dict[str, Any] = {"kubeconfig": str(kubeconfig)}
    if qps is not None:
        connection.update(qps=qps, burst=qps)
    config["clientConnection"] = connection
    profiles = config.get("profiles") or [{}]
    if len(profiles) != 1:
        raise ValueError(f"{peer}: expected one scheduler profile, found {len(profiles)}")
    profiles[0]["schedulerName"] = SCHEDULER
    if peer == "koord-scheduler" and job_features:
        _switch_on_job_features(profiles[0])
    config["profiles"] = profiles
    return config


def _switch_on_job_features(profile: dict[str, Any]) -> None:
    """Job-level preemption and network-topology placement, as koord-scheduler's release
    offers them, so that its preemption and topology scenarios run on the same objects."""
    plugin_config = [
        entry for entry in profile.get("pluginConfig") or [] if entry.get("name") != "Coscheduling"
    ]
    plugin_config.append({"name": "Coscheduling", "args": dict(KOORD_COSCHEDULING_ARGS)})
    profile["pluginConfig"] = plugin_config
    plugins = profile.setdefault("plugins", {})
    plugins["postFilter"] = dict(KOORD_POST_FILTER)


#: kube-scheduler's gang scheduling, by release. 1.36 (alpha): GenericWorkload makes it watch
#: ``scheduling.k8s.io/v1alpha2`` PodGroups and schedule the pods naming one
#: (``spec.schedulingGroup.podGroupName``) a group at a time; GangScheduling (which requires
#: it) adds the GangScheduling plugin (PreEnqueue: wait for minCount pods; Permit: hold the
#: members until minCount are assumed). 1.37 (beta, off by default): GenericWorkload alone
#: covers gang scheduling and workload-aware preemption (``v1beta1`` PodGroups);
#: CompositePodGroup (with TopologyAwareWorkloadScheduling) adds gangs of gangs;
#: DRAWorkloadResourceClaims (beta, off by default) has it allocate a PodGroup's claims once
#: and reserve them for the PodGroup. The API server serves the objects with the same gates
#: (controlplane/releases.py).
KUBE_SCHEDULER_GANG_GATES = {
    "1.36": "GenericWorkload=true,GangScheduling=true",
    "1.37": (
        "GenericWorkload=true,CompositePodGroup=true,TopologyAwareWorkloadScheduling=true,"
        "PodGroupPreemptionPolicy=true,DRAWorkloadResourceClaims=true"
    ),
}


def peer_flags(
    peer: str, *, job_features: bool = False, upstream_gangs: bool = False
) -> tuple[str, ...]:
    """Command-line flags a peer needs beyond its configuration file. ``upstream_gangs``: the
    scenario declares its gangs as upstream PodGroups, which kube-scheduler reads only with
    its gang gates on."""
    if peer == "koord-scheduler" and job_features:
        return KOORD_FLAGS
    if peer == "kube-scheduler" and upstream_gangs:
        gates = KUBE_SCHEDULER_GANG_GATES[selected_release().name]
        return (f"--feature-gates={gates}",)
    return ()
