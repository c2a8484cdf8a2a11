"""A local Kubernetes control plane (etcd, kube-apiserver, kwok) built from pinned Go modules.

Command line, from the repository root:

    python -m controlplane build | up [--nodes FILE|none] | down | status

From tests:

    from controlplane import LocalControlPlane, NodeSpec, create_nodes, delete_nodes
"""

from .build import BuildError, ensure_built
from .cluster import ControlPlaneError, Endpoints, LocalControlPlane, Status
from .layout import DEFAULT_NODES_FILE, DEFAULT_STATE_DIR
from .nodes import (
    NodeSpec,
    NodeSpecError,
    Taint,
    create_nodes,
    delete_nodes,
    expand_name_range,
    load_node_specs,
    parse_node_specs,
    wait_nodes_ready,
)
from .progress import Reporter

__all__ = [
    "DEFAULT_NODES_FILE",
    "DEFAULT_STATE_DIR",
    "BuildError",
    "ControlPlaneError",
    "Endpoints",
    "LocalControlPlane",
    "NodeSpec",
    "NodeSpecError",
    "Reporter",
    "Status",
    "Taint",
    "create_nodes",
    "delete_nodes",
    "ensure_built",
    "expand_name_range",
    "load_node_specs",
    "parse_node_specs",
    "wait_nodes_ready",
]
