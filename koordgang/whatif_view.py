"""`koordgang whatif`: asks a running daemon (POST /whatif), or works the answer out itself from
the API server (``--from-cluster``, read-only: GET and LIST only)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

from koordgang.settings import Settings


class WhatIfFailed(Exception):
    """The question could not be asked (no daemon, no API server)."""


class BadInput(Exception):
    """The file cannot be answered for (the daemon said 400, or it was read here)."""


def ask_daemon(url: str, text: str, timeout: float = 30.0) -> dict[str, Any]:
    """The daemon's answer. A file that cannot be a job is refused here first, naming the
    field as the daemon would, so that bad input says so even with no daemon to ask (the
    schedulerName and PriorityClasses only the daemon's side can check)."""
    from koordgang.whatif.inputs import WhatIfError, read_input

    try:
        read_input(text, None)
    except WhatIfError as error:
        raise BadInput(str(error)) from None
    request = urllib.request.Request(
        url.rstrip("/") + "/whatif",
        data=text.encode(),
        method="POST",
        headers={"Content-Type": "application/yaml"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            body = json.loads(reply.read())
    except urllib.error.HTTPError as error:
        try:
            message = json.loads(error.read()).get("error") or str(error)
        except ValueError:
            message = str(error)
        if error.code == 400:
            raise BadInput(message) from None
        raise WhatIfFailed(f"{url}/whatif answered {error.code}: {message}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise WhatIfFailed(
            f"cannot ask {url}/whatif: {error} (is the daemon running? In a cluster: "
            "kubectl -n koordgang-system port-forward deploy/koordgang 10251, or use "
            "--from-cluster)"
        ) from error
    if not isinstance(body, dict):
        raise WhatIfFailed(f"{url}/whatif did not answer with an object")
    return body


def from_cluster(kubeconfig: str | None, text: str, settings: Settings) -> dict[str, Any]:
    """The answer worked out here, on a state listed from the API server."""
    from koordgang.adapters.discovery import resolve_versions
    from koordgang.clients.api import KubeApi
    from koordgang.clients.config import ConfigError, load_connection
    from koordgang.clients.errors import ApiError, ApiUnavailable
    from koordgang.gangapis import GANG_APIS, Resolve
    from koordgang.plugins.profile import default_framework
    from koordgang.state.gangs import GangRegistry
    from koordgang.whatif.cluster import read_cluster, read_priorities
    from koordgang.whatif.fork import what_if
    from koordgang.whatif.inputs import WhatIfError, priority_class_names, read_input

    try:
        parsed = read_input(text, settings.scheduler_names)
    except WhatIfError as error:
        raise BadInput(str(error)) from None
    try:
        connection = load_connection(kubeconfig or "")
    except ConfigError as error:
        raise WhatIfFailed(str(error)) from None
    watched = default_framework(
        settings, GangRegistry(0.0, resolve=Resolve(GANG_APIS))
    ).watched_resources()

    async def read() -> tuple[Any, dict[str, int], str]:
        api = KubeApi(connection, pool_size=4, user_agent="koordgang-whatif")
        try:
            needed = priority_class_names(parsed.pods)
            priorities, warning = await read_priorities(api, needed)
            served = await resolve_versions(api, watched)
            cluster = await read_cluster(
                api, served, settings.scheduler_names, settings.others_in_flight_for
            )
            return cluster, priorities, warning
        finally:
            await api.close()

    try:
        cluster, priorities, warning = asyncio.run(read())
    except WhatIfError as error:
        raise BadInput(str(error)) from None
    except (ApiError, ApiUnavailable) as error:
        raise WhatIfFailed(f"cannot read the cluster: {error}") from None
    try:
        answer = what_if(settings, cluster.state, parsed, priorities, held_known=False)
    except WhatIfError as error:
        raise BadInput(str(error)) from None
    answer["sources"] = parsed.sources
    if warning:
        answer["warnings"].append(warning)
    if cluster.skipped:
        answer["warnings"].append(f"not read: {', '.join(cluster.skipped)}")
    return answer
