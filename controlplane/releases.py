"""The Kubernetes releases the local control plane runs: 1.37 by default, 1.36 with `KUBE=1.36`.

Clusters in the field run both for a year, and the upstream gang API differs between them:
1.36 serves it as the alpha `scheduling.k8s.io/v1alpha2`, 1.37 as the beta `v1beta1` (and no
longer serves v1alpha2), with CompositePodGroup as the alpha `v1alpha3`. Each release has its
own pinned Go modules under `gomod/v<release>/` and its own cached binaries (the build cache
keys binaries by their pins, so both stay cached side by side).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .layout import GOMOD_DIR

#: The environment variable that selects the release (`make cluster-up KUBE=1.36`).
ENV_VAR = "KUBE"


@dataclass(frozen=True)
class KubeRelease:
    """One release: where its pins are and how its gang API is switched on."""

    name: str
    #: For kube-apiserver and kube-controller-manager alike.
    feature_gates: str
    #: API versions served only when asked for (alpha, and beta APIs new since 1.24).
    runtime_config: str
    #: The upstream PodGroup's version here: what `_health` asks the API server for, to tell a
    #: plane started with `runtime_config` from one started without.
    podgroup_version: str

    @property
    def gomod_dir(self) -> Path:
        return GOMOD_DIR / f"v{self.name}"

    @property
    def podgroup_path(self) -> str:
        return f"/apis/scheduling.k8s.io/{self.podgroup_version}"


#: GenericWorkload serves Workload and PodGroup and the pod field
#: spec.schedulingGroup.podGroupName; WorkloadWithJob (requires GenericWorkload) makes the Job
#: controller create a Workload and a PodGroup for gang-shaped Jobs and point their pods at the
#: PodGroup. In 1.37 GenericWorkload is beta but off by default; CompositePodGroup (alpha;
#: requires TopologyAwareWorkloadScheduling) serves gangs of gangs, PodGroupPreemptionPolicy
#: (alpha) keeps a PodGroup's spec.preemptionPolicy. DRAWorkloadResourceClaims (beta in 1.37, off
#: by default; requires GenericWorkload) serves a PodGroup's spec.resourceClaims and makes the
#: resourceclaim controller create one claim per PodGroup from its template. 1.36 has it only
#: as alpha, and the plane there leaves it off.
RELEASES: dict[str, KubeRelease] = {
    "1.37": KubeRelease(
        name="1.37",
        feature_gates=(
            "GenericWorkload=true,WorkloadWithJob=true,CompositePodGroup=true,"
            "TopologyAwareWorkloadScheduling=true,PodGroupPreemptionPolicy=true,"
            "DRAWorkloadResourceClaims=true"
        ),
        runtime_config="scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
        podgroup_version="v1beta1",
    ),
    "1.36": KubeRelease(
        name="1.36",
        feature_gates="GenericWorkload=true,WorkloadWithJob=true",
        runtime_config="scheduling.k8s.io/v1alpha2=true",
        podgroup_version="v1alpha2",
    ),
}
DEFAULT_RELEASE = "1.37"


class UnknownRelease(ValueError):
    """`KUBE` names a release the control plane has no pins for."""


def selected_release(environ: dict[str, str] | None = None) -> KubeRelease:
    """The release `KUBE` names (a leading `v` and a patch number are accepted), else 1.37."""
    env = os.environ if environ is None else environ
    wanted = (env.get(ENV_VAR) or DEFAULT_RELEASE).strip().lstrip("v")
    minor = ".".join(wanted.split(".")[:2])
    try:
        return RELEASES[minor]
    except KeyError:
        known = ", ".join(sorted(RELEASES))
        raise UnknownRelease(f"{ENV_VAR}={wanted}: the control plane runs {known}") from None
