"""The CRDs of manifests/crds/ (PodGroup, ClusterNetworkTopology), installed or updated in
place: what `kubectl apply -f manifests/crds/` does, without needing kubectl."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .layout import REPO_ROOT

CRDS_DIR = REPO_ROOT / "manifests" / "crds"


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # some releases' CRDs are ~570 kB


def install_crds(api_client: Any, directory: Path = CRDS_DIR, timeout: float = 30.0) -> list[str]:
    """Creates or replaces every CRD in ``directory`` and waits until each is served;
    returns their names."""
    return install_crd_files(api_client, sorted(directory.glob("*.yaml")), timeout)


def install_crd_files(api_client: Any, paths: Iterable[Path], timeout: float = 30.0) -> list[str]:
    """Creates or replaces every CRD of the files (one or more documents each) and waits until
    each is served; returns their names."""
    # Imported here: loading the client takes about a second; `down`/`status` never need it.
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    extensions = client.ApiextensionsV1Api(api_client)
    names = []
    bodies = [
        body
        for path in paths
        for body in yaml.load_all(path.read_text(), Loader=_Loader)
        if body  # files may start with "---"
    ]
    for body in bodies:
        name = body["metadata"]["name"]
        names.append(name)
        try:
            extensions.create_custom_resource_definition(body)
        except ApiException as error:
            if error.status != 409:
                raise
            stored = extensions.read_custom_resource_definition(name).metadata
            assert stored is not None, f"CRD {name} read back without metadata"
            body["metadata"]["resourceVersion"] = stored.resource_version
            extensions.replace_custom_resource_definition(name, body)
    for name in names:
        _wait_established(extensions, name, timeout)
    return names


def _wait_established(extensions: Any, name: str, timeout: float) -> None:
    """A CRD serves its kind only once Established; `kubectl apply` right after would fail."""
    deadline = time.monotonic() + timeout
    while True:
        crd = extensions.read_custom_resource_definition(name)
        conditions = (crd.status and crd.status.conditions) or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRD {name} not Established after {timeout:.0f} s")
        time.sleep(0.1)
