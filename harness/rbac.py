"""The scheduler's own identity for e2e: the ServiceAccount and RBAC of ``manifests/``.

The daemon does not run as cluster admin in the tests: the namespace and RBAC manifests are
applied as a user applies them (``kubectl apply -f``), a token is requested for the
ServiceAccount they define (TokenRequest API), and the daemon gets a kubeconfig holding only
that token. A rule missing from the manifests then fails a test (the daemon's log says
``cannot <verb> resource``, see `rbac_denials`), and e2e/test_least_privilege.py fails when a
rule grants more than the code needs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from controlplane.kubeconfig import api_client_from
from harness.kube import ServerSideApply, wait_until

REPO = Path(__file__).resolve().parent.parent
MANIFESTS = REPO / "manifests"
#: What `apply_rbac` applies, in this order: the namespace first, as kustomize would.
RBAC_MANIFESTS = (MANIFESTS / "namespace.yaml", MANIFESTS / "rbac.yaml")
#: Long enough for the whole suite (about 6 minutes) many times over.
TOKEN_SECONDS = 2 * 3600
KUBECTL = "kubectl"


def _service_account() -> tuple[str, str]:
    docs = yaml.safe_load_all((MANIFESTS / "rbac.yaml").read_text())
    account = next(d for d in docs if d and d["kind"] == "ServiceAccount")
    return account["metadata"]["namespace"], account["metadata"]["name"]


#: Where the Deployment runs and who it runs as (``manifests/rbac.yaml``'s ServiceAccount).
NAMESPACE, SERVICE_ACCOUNT = _service_account()
USERNAME = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"

#: How the API server words an RBAC denial (``User "..." cannot patch resource "pods" in API
#: group "" in the namespace "x"``); other 403s (a namespace being terminated) differ.
_DENIAL = re.compile(r"cannot [a-z]+ resource \S+(?: in API group \S+)?")


def kubectl(kubeconfig: str | Path, *args: str, timeout: float = 60) -> str:
    """Runs kubectl; fails with its stderr."""
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def apply_rbac(admin_kubeconfig: str) -> None:
    """The namespace and RBAC of manifests/, applied as a user would (kubectl apply -f);
    server-side apply through the Python client where there is no kubectl."""
    if shutil.which(KUBECTL):
        files = [arg for path in RBAC_MANIFESTS for arg in ("-f", str(path))]
        kubectl(admin_kubeconfig, "apply", *files)
        return
    applier = ServerSideApply(api_client_from(admin_kubeconfig), "koordgang-e2e")
    for path in RBAC_MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                applier.apply(doc, force_conflicts=True)


def request_token(admin: client.ApiClient, seconds: int = TOKEN_SECONDS) -> str:
    """A bound token of the ServiceAccount (TokenRequest API), valid for ``seconds``."""
    core = client.CoreV1Api(admin)
    wait_until(
        lambda: _exists(core), timeout=30, what=f"ServiceAccount {NAMESPACE}/{SERVICE_ACCOUNT}"
    )
    body = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds)
    )
    reply = core.create_namespaced_service_account_token(SERVICE_ACCOUNT, NAMESPACE, body)
    token = reply.status.token if reply.status is not None else None
    assert token, "a TokenRequest answered without a token"
    return token


def _exists(core: client.CoreV1Api) -> bool:
    try:
        core.read_namespaced_service_account(SERVICE_ACCOUNT, NAMESPACE)
    except client.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def write_token_kubeconfig(admin_kubeconfig: str, token: str, path: Path) -> Path:
    """A kubeconfig for the same server, trusting the same CA, with the token as its only
    credential; readable by us only."""
    admin = yaml.safe_load(Path(admin_kubeconfig).read_text())
    contexts = {c["name"]: c["context"] for c in admin["contexts"]}
    clusters = {c["name"]: c["cluster"] for c in admin["clusters"]}
    server = dict(clusters[contexts[admin["current-context"]]["cluster"]])
    ca_file = server.get("certificate-authority")
    if ca_file and not Path(ca_file).is_absolute():
        server["certificate-authority"] = str(Path(admin_kubeconfig).parent / ca_file)
    name = f"{NAMESPACE}-{SERVICE_ACCOUNT}"
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": server}],
        "users": [{"name": USERNAME, "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": name, "user": USERNAME, "namespace": NAMESPACE},
            }
        ],
        "current-context": name,
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(yaml.safe_dump(kubeconfig, sort_keys=False))
    return path


def wait_until_bound(kubeconfig: Path) -> None:
    """The API server's RBAC authorizer learns of new bindings from a watch: wait until the
    token may do what the ClusterRole and the leader-election Role grant."""
    api = client.AuthorizationV1Api(api_client_from(kubeconfig))

    def allowed(attributes: dict[str, Any]) -> bool:
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(**attributes)
            )
        )
        status = api.create_self_subject_access_review(review).status
        return bool(status and status.allowed)

    wait_until(
        lambda: (
            allowed({"verb": "create", "resource": "pods", "subresource": "binding"})
            and allowed(
                {
                    "verb": "create",
                    "group": "coordination.k8s.io",
                    "resource": "leases",
                    "namespace": NAMESPACE,
                }
            )
        ),
        timeout=30,
        what=f"the RBAC of manifests/ to apply to {USERNAME}",
    )


def make_scheduler_kubeconfig(admin_kubeconfig: str, path: Path) -> Path:
    """Applies the RBAC of manifests/ and writes a kubeconfig of its ServiceAccount."""
    apply_rbac(admin_kubeconfig)
    admin = api_client_from(admin_kubeconfig)
    write_token_kubeconfig(admin_kubeconfig, request_token(admin), path)
    wait_until_bound(path)
    return path


def rbac_denials(log: str) -> list[str]:
    """The RBAC denials a daemon's log mentions (a rule missing from manifests/rbac.yaml)."""
    return sorted(set(_DENIAL.findall(log)))
