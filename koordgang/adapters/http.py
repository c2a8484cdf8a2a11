"""/healthz, /readyz and /metrics for probes and Prometheus; /gangs and /whatif for people;
/debug/memory when memory is traced."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from koordgang.whatif.inputs import WhatIfError

#: Answers a what-if for a file's contents (raises WhatIfError for a file it cannot take).
WhatIf = Callable[[str], Awaitable[dict[str, Any]]]
#: The largest file /whatif takes.
WHATIF_MAX_BYTES = 4 * 1024 * 1024


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        problems: Callable[[], list[str]],
        is_ready: Callable[[], bool],
        render_metrics: Callable[[], bytes],
        render_gangs: Callable[[bool], list[dict[str, Any]]] = lambda with_basic: [],
        role: Callable[[], str] = lambda: "leader",
        whatif: WhatIf | None = None,
        memory: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self._whatif = whatif
        self._memory = memory
        self._role = role
        self.host = host
        self.port = port
        self._problems = problems
        self._is_ready = is_ready
        self._render_metrics = render_metrics
        self._render_gangs = render_gangs
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=WHATIF_MAX_BYTES)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/gangs", self._gangs)
        if self._whatif is not None:
            app.router.add_post("/whatif", self._what_if)
        if self._memory is not None:
            app.router.add_get("/debug/memory", self._debug_memory)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        problems = self._problems()
        if not problems:
            return web.Response(text="ok\n")
        return web.Response(status=500, text="".join(f"{line}\n" for line in problems))

    async def _readyz(self, _: web.Request) -> web.Response:
        if self._is_ready():
            # Followers are ready too (their caches are warm): an unready follower would
            # block rollouts. The body says which one this is.
            return web.Response(text=f"ok ({self._role()})\n")
        return web.Response(status=503, text="initial listing of pods and nodes not finished\n")

    async def _gangs(self, request: web.Request) -> web.Response:
        # ?all=true adds the group objects that are not gangs (upstream's basic PodGroups).
        with_basic = request.query.get("all", "").lower() in ("1", "true", "yes")
        return web.json_response({"gangs": self._render_gangs(with_basic)})

    async def _what_if(self, request: web.Request) -> web.Response:
        assert self._whatif is not None
        try:
            text = await request.text()
        except UnicodeDecodeError as error:
            return web.json_response({"error": f"the file is not text: {error}"}, status=400)
        if not self._is_ready():
            return web.json_response(
                {"error": "the daemon has not listed pods and nodes yet; ask again shortly"},
                status=503,
            )
        try:
            answer = await self._whatif(text)
        except WhatIfError as error:
            return web.json_response({"error": str(error)}, status=400)
        return web.json_response(answer)

    async def _debug_memory(self, _: web.Request) -> web.Response:
        assert self._memory is not None
        return web.json_response(self._memory())

    async def _metrics(self, _: web.Request) -> web.Response:
        body = self._render_metrics()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
