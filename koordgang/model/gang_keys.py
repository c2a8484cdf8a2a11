"""The pod annotations the gang APIs read, declared once, below the APIs: ``parse_pod`` keeps
these and drops every other annotation (a scheduler holding 100,000 pods keeps no
``last-applied-configuration``). An entry ending in ``/`` is a prefix.

Each gang API's ``pod_keys`` (``koordgang/gangapis/``) is one of the tuples here, and a test
checks that the APIs' keys add up to :data:`POD_ANNOTATION_KEYS`: an API that reads a pod
annotation declares it here."""

from __future__ import annotations

#: Koordinator: its gang annotations, and its scheduling options (soft eviction).
KOORDINATOR: tuple[str, ...] = ("gang.scheduling.koordinator.sh/", "scheduling.koordinator.sh/")
#: Volcano: the annotations that name a pod's PodGroup (the common key, then Volcano's own).
VOLCANO_GROUP_NAMES: tuple[str, ...] = (
    "scheduling.k8s.io/group-name",
    "scheduling.volcano.sh/group-name",
)
#: Volcano: the task a member belongs to (task minimums count per task).
VOLCANO_TASK = "volcano.sh/task-spec"
VOLCANO: tuple[str, ...] = (*VOLCANO_GROUP_NAMES, VOLCANO_TASK)
#: Kueue's plain pod groups: the group's size (``pod-group-total-count``).
KUEUE: tuple[str, ...] = ("kueue.x-k8s.io/",)
#: scheduler-plugins and upstream Kubernetes name the gang by a label or a spec field.
NONE: tuple[str, ...] = ()

#: Every pod annotation key (or key prefix) some gang API reads.
POD_ANNOTATION_KEYS: tuple[str, ...] = (*KOORDINATOR, *VOLCANO, *KUEUE)
