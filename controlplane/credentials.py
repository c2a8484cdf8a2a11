"""Credentials for the local API server: an admin bearer token and the service-account key.

The API server makes its own self-signed serving certificate and CA in --cert-dir; we only
read that back (see `apiserver_ca_bundle`) to let clients verify it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

ADMIN_USER = "koordgang-admin"


def write_admin_token(token_file: Path) -> str:
    """A --token-auth-file with one token for a member of system:masters (all permissions)."""
    token = secrets.token_hex(24)
    token_file.parent.mkdir(parents=True, exist_ok=True)
    # Format: token,user,uid,"group1,group2"
    _write_private(token_file, f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
    return token


def generate_service_account_key(key_file: Path) -> None:
    """An RSA key that both signs (--service-account-signing-key-file) and verifies
    (--service-account-key-file) service-account tokens; the API server accepts a private key
    for the latter and derives the public half."""
    key_file.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["openssl", "genrsa", "-out", str(key_file), "2048"],
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    key_file.chmod(0o600)


def apiserver_ca_bundle(cert_dir: Path) -> Path:
    """The file the API server writes its self-signed serving certificate to.

    It holds the serving certificate followed by the CA that signed it, so it works as a
    trust bundle for clients. It appears only once the API server has started.
    """
    return cert_dir / "apiserver.crt"


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
