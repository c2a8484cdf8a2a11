"""The kubeconfig that tests, kubectl, kwok and the scheduler use to reach the local API server."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .credentials import ADMIN_USER

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

CONTEXT = "koordgang-local"


def render_kubeconfig(server: str, token: str, ca_bundle: Path | None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca_bundle is not None:
        # Embedded rather than referenced, so that the file keeps working when copied.
        cluster["certificate-authority-data"] = base64.b64encode(ca_bundle.read_bytes()).decode()
    else:
        cluster["insecure-skip-tls-verify"] = True
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": ADMIN_USER, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: Path, server: str, token: str, ca_bundle: Path | None) -> None:
    text = yaml.safe_dump(render_kubeconfig(server, token, ca_bundle), sort_keys=False)
    # Written under a temporary name and renamed: a reader never sees half a file, and the
    # token inside is readable only by us.
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(partial, path)


def api_client_from(kubeconfig: Path | str) -> ApiClient:
    """A kubernetes.client.ApiClient for the cluster of ``kubeconfig``."""
    # Imported here: loading the client takes about a second; `down`/`status` never need it.
    from kubernetes import config

    # The loader is unannotated in the kubernetes package.
    client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    return client
