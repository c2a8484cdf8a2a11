"""Where the API server is and how to authenticate, from a kubeconfig or the pod's service
account. The ``kubernetes`` package does the kubeconfig parsing (contexts, embedded certs,
exec plugins); the hot paths then use aiohttp with the same credentials."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


@dataclass(frozen=True, slots=True)
class Connection:
    server: str
    token: str | None = None
    #: Re-read the token from this file now and then (service-account tokens rotate).
    token_path: str | None = None
    ca_path: str | None = None
    cert_path: str | None = None
    key_path: str | None = None
    insecure: bool = False

    def current_token(self) -> str | None:
        if self.token_path:
            try:
                return Path(self.token_path).read_text().strip()
            except OSError:
                return self.token
        return self.token


class ConfigError(Exception):
    pass


def load_connection(kubeconfig: str = "") -> Connection:
    """Kubeconfig if one is given (flag or $KUBECONFIG), else in-cluster, else ~/.kube/config."""
    from kubernetes import client, config  # imported late: it is slow to import

    cfg = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG", "")
    token_path: str | None = None
    try:
        if path:
            config.load_kube_config(config_file=path, client_configuration=cfg)  # type: ignore[no-untyped-call]
        elif SERVICE_ACCOUNT_TOKEN.exists() and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            token_path = str(SERVICE_ACCOUNT_TOKEN)
        else:
            config.load_kube_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, TypeError, ValueError) as error:
        where = path or "in-cluster / ~/.kube/config"
        raise ConfigError(f"cannot load Kubernetes credentials from {where}: {error}") from error
    token = None
    authorization = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if authorization:
        prefix = cfg.api_key_prefix.get("authorization", "")
        token = authorization.removeprefix("Bearer ").strip() if not prefix else authorization
    return Connection(
        server=cfg.host.rstrip("/"),
        token=token,
        token_path=token_path,
        ca_path=cfg.ssl_ca_cert,
        cert_path=cfg.cert_file,
        key_path=cfg.key_file,
        insecure=not cfg.verify_ssl,
    )
