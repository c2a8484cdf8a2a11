"""Health probes for etcd, kube-apiserver, kwok and kube-controller-manager over loopback
HTTP(S).

Proxies are bypassed on purpose: these endpoints are on 127.0.0.1, and an https_proxy in the
environment without a matching no_proxy would otherwise send the probes to the proxy.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """Verify against `ca_file`, or skip verification when there is none."""
    if ca_file is not None:
        return ssl.create_default_context(cafile=str(ca_file))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def http_get(
    url: str,
    *,
    token: str | None = None,
    context: ssl.SSLContext | None = None,
    timeout: float = 2.0,
) -> tuple[int, str]:
    """(status, body); status 0 when nothing answered. TLS verification errors propagate."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with opener.open(request, timeout=timeout) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except urllib.error.URLError as error:
        if isinstance(error.reason, ssl.SSLCertVerificationError):
            raise error.reason from error
        return 0, str(error.reason)
    except (OSError, ValueError) as error:  # reset connections, half-started servers
        return 0, str(error)


def etcd_healthy(client_port: int) -> bool:
    status, body = http_get(f"http://127.0.0.1:{client_port}/health")
    if status != 200:
        return False
    try:
        return bool(json.loads(body).get("health") == "true")
    except ValueError:
        return False


def apiserver_ready(port: int, token: str, context: ssl.SSLContext) -> bool:
    status, body = http_get(f"https://127.0.0.1:{port}/readyz", token=token, context=context)
    return status == 200 and body.strip() == "ok"


def kwok_healthy(port: int) -> bool:
    status, _ = http_get(f"http://127.0.0.1:{port}/healthz")
    return status == 200


def controller_manager_healthy(port: int) -> bool:
    # Its serving certificate is self-signed and kept in memory: nothing to verify against.
    status, body = http_get(f"https://127.0.0.1:{port}/healthz", context=tls_context(None))
    return status == 200 and body.strip() == "ok"
