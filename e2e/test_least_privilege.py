"""The scheduler's ServiceAccount may do what the code needs and nothing more.

`kubectl auth can-i --list`, run with the very token the daemon runs with in these tests
(the ``scheduler_kubeconfig`` fixture), lists what manifests/rbac.yaml grants; it is compared
with what the code calls: a rule widened (or a wildcard, or a read of Secrets) fails here, a
rule missing fails the scenario that needs it (see harness/rbac.py).
"""

from __future__ import annotations

from controlplane.releases import selected_release
from harness.rbac import NAMESPACE, kubectl
from koordgang.gangapis import GANG_APIS
from koordgang.plugins.networktopology.plugin import RESOURCE as TOPOLOGY
from koordgang.plugins.nodepools import CLAIMS as NODECLAIMS
from koordgang.plugins.nodepools import RESOURCE as NODEPOOLS

READ = frozenset({"get", "list", "watch"})

#: Granted to every authenticated user by the API server's default roles (system:basic-user;
#: from Kubernetes 1.37 also system:cluster-trust-bundle-discovery).
EVERYONE = {
    ("authentication.k8s.io", "selfsubjectreviews"): {"create"},
    ("authorization.k8s.io", "selfsubjectaccessreviews"): {"create"},
    ("authorization.k8s.io", "selfsubjectrulesreviews"): {"create"},
}
if selected_release().name != "1.36":
    EVERYONE[("certificates.k8s.io", "clustertrustbundles")] = set(READ)


def _gang_grants() -> dict[tuple[str, str], set[str]]:
    """Every gang API's objects are read, and their status written: through the status
    subresource, or into the object for a kind without one (koordgang/engine/status_writer.py)."""
    grants: dict[tuple[str, str], set[str]] = {}
    for api in GANG_APIS:
        for resource in [api.resource, *api.related]:
            if resource is None:
                continue
            group, plural = resource.group, resource.plural
            grants.setdefault((group, plural), set()).update(READ)
            status = f"{plural}/status" if resource.status_subresource else plural
            grants.setdefault((group, status), set()).add("patch")
    return grants


#: Cluster-wide: what the code calls (koordgang/clients/*.py, the informers of app.py, kopf).
CLUSTER_WIDE: dict[tuple[str, str], set[str]] = {
    # Informers; preemption deletes its victims, the reporter annotates our pods.
    ("", "pods"): {*READ, "patch", "delete"},
    ("", "pods/binding"): {"create"},
    # PodScheduled explanations, DisruptionTarget, nominatedNodeName.
    ("", "pods/status"): {"patch"},
    ("", "nodes"): set(READ),
    ("", "namespaces"): set(READ),
    ("", "persistentvolumeclaims"): set(READ),
    ("policy", "poddisruptionbudgets"): set(READ),
    # Jobs' time limits (activeDeadlineSeconds).
    ("batch", "jobs"): set(READ),
    # Devices: slices, classes and DeviceTaintRules read; claims read, given the finalizer,
    # and their allocation and consumers written (resourceclaims/binding is what the API
    # server asks of a writer of status.allocation and status.reservedFor).
    ("resource.k8s.io", "resourceslices"): set(READ),
    ("resource.k8s.io", "deviceclasses"): set(READ),
    ("resource.k8s.io", "devicetaintrules"): set(READ),
    # A pod's extended resources served through DRA: the claim made for them, and one left
    # from an earlier attempt deleted.
    ("resource.k8s.io", "resourceclaims"): {*READ, "patch", "create", "delete"},
    ("resource.k8s.io", "resourceclaims/status"): {"patch"},
    ("resource.k8s.io", "resourceclaims/binding"): {"patch"},
    # A what-if reads the PriorityClasses its pods name (koordgang/whatif/cluster.py).
    ("scheduling.k8s.io", "priorityclasses"): {"list"},
    ("", "events"): {"create"},
    (TOPOLOGY.group, TOPOLOGY.plural): set(READ),
    (TOPOLOGY.group, f"{TOPOLOGY.plural}/status"): {"patch"},
    # Karpenter's NodePools and NodeClaims, for their limits and the room on its way
    # (koordgang/plugins/nodepools).
    (NODEPOOLS.group, NODEPOOLS.plural): set(READ),
    (NODECLAIMS.group, NODECLAIMS.plural): set(READ),
    # kopf learns from CRDs when the resources it watches appear.
    ("apiextensions.k8s.io", "customresourcedefinitions"): set(READ),
    **_gang_grants(),
}

#: In its own namespace only: leader election reads, creates and replaces its Lease
#: (koordgang/clients/leases.py).
OWN_NAMESPACE = {("coordination.k8s.io", "leases"): {"get", "create", "update"}}


def can_i_list(kubeconfig: str, namespace: str) -> dict[tuple[str, str], set[str]]:
    """``kubectl auth can-i --list`` as a map of (API group, resource) to verbs. Non-resource
    URLs are checked to be read-only and left out."""
    lines = kubectl(kubeconfig, "auth", "can-i", "--list", "-n", namespace).splitlines()
    header = lines[0]
    urls_at, names_at, verbs_at = (
        header.index(title) for title in ("Non-Resource URLs", "Resource Names", "Verbs")
    )
    grants: dict[tuple[str, str], set[str]] = {}
    for line in lines[1:]:
        if not line.strip():
            continue
        resource = line[:urls_at].strip()
        urls = line[urls_at:names_at].strip()
        names = line[names_at:verbs_at].strip()
        verbs = set(line[verbs_at:].strip().strip("[]").split())
        if not resource:
            assert verbs == {"get"}, f"a non-resource URL that is not read-only: {line}"
            continue
        assert (urls, names) == ("[]", "[]"), f"a rule limited to URLs or names: {line}"
        # `pods/status`, `podgroups.scheduling.k8s.io/status`: resource[.group][/subresource]
        base, _, sub = resource.partition("/")
        plural, _, group = base.partition(".")
        key = (group, f"{plural}/{sub}" if sub else plural)
        grants.setdefault(key, set()).update(verbs)
    return grants


def test_the_scheduler_may_do_what_the_code_needs_and_nothing_more(
    scheduler_kubeconfig: str, namespace: str
) -> None:
    # In a user's namespace: the ClusterRole only.
    elsewhere = can_i_list(scheduler_kubeconfig, namespace)
    assert not [k for k, verbs in elsewhere.items() if "*" in k[1] or "*" in verbs]
    assert {k: v for k, v in elsewhere.items() if k not in EVERYONE} == CLUSTER_WIDE
    for key, verbs in EVERYONE.items():
        assert elsewhere.get(key) == verbs, key
    # No Secret or ConfigMap anywhere; in its own namespace, the Lease besides.
    for where in (namespace, "default", "kube-system", NAMESPACE):
        granted = can_i_list(scheduler_kubeconfig, where)
        assert ("", "secrets") not in granted, where
        assert ("", "configmaps") not in granted, where
    own = can_i_list(scheduler_kubeconfig, NAMESPACE)
    assert {k: v for k, v in own.items() if k not in EVERYONE} == {
        **CLUSTER_WIDE,
        **OWN_NAMESPACE,
    }


def test_the_exact_write_verbs_per_resource(scheduler_kubeconfig: str, namespace: str) -> None:
    """The same, as the list of writes a reviewer reads: widening any of them fails here."""
    writes = {
        _as_kubectl_shows(group, resource): sorted(verbs - READ)
        for (group, resource), verbs in can_i_list(scheduler_kubeconfig, NAMESPACE).items()
        if verbs - READ and (group, resource) not in EVERYONE
    }
    assert writes == {
        "pods": ["delete", "patch"],
        "pods/binding": ["create"],
        "pods/status": ["patch"],
        "events": ["create"],
        "podgroups.scheduling.sigs.k8s.io/status": ["patch"],
        "podgroups.scheduling.x-k8s.io/status": ["patch"],
        "podgroups.scheduling.k8s.io/status": ["patch"],
        "compositepodgroups.scheduling.k8s.io/status": ["patch"],
        "podgroups.scheduling.volcano.sh": ["patch"],
        "clusternetworktopologies.scheduling.koordinator.sh/status": ["patch"],
        # The delete-protection finalizer; then allocation and reservedFor (the API server
        # checks resourceclaims/binding for those); the claims of extended resources made
        # and deleted.
        "resourceclaims.resource.k8s.io": ["create", "delete", "patch"],
        "resourceclaims.resource.k8s.io/status": ["patch"],
        "resourceclaims.resource.k8s.io/binding": ["patch"],
        "leases.coordination.k8s.io": ["create", "update"],
    }


def _as_kubectl_shows(group: str, resource: str) -> str:
    plural, _, sub = resource.partition("/")
    name = f"{plural}.{group}" if group else plural
    return f"{name}/{sub}" if sub else name
