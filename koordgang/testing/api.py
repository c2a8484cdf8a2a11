"""``KubeApi`` without a server, for the engine's tests.

``FakeApi`` has ``request``'s signature, records every call (method, path, body) and answers
from rules a test sets (by default: binds, PATCHes and Events succeed; GET of a pod answers
what the test gave, else 404). Requests can be held in flight (``hold``) until the test
releases them, and take extra event-loop turns (``latency``).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from koordgang.clients.api import JSON
from koordgang.clients.errors import ApiError
from koordgang.testing.builders.pods import NS

_BINDING = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")
_EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")


@dataclass
class Call:
    method: str
    path: str
    body: Any
    content_type: str
    params: Mapping[str, str] | None
    #: "pending" while in flight, then "ok" or the exception's repr.
    outcome: str = "pending"
    #: Position among the calls that succeeded, in the order their replies came.
    landed: int = -1

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


Answer = Any  # an Exception to raise, a callable(Call) -> reply, or a reply


@dataclass
class _Rule:
    answers: list[Answer]
    #: The last answer repeats once the others are used up.
    index: int = 0

    def next(self) -> Answer:
        answer = self.answers[min(self.index, len(self.answers) - 1)]
        self.index += 1
        return answer


@dataclass
class _Hold:
    matches: Callable[[Call], bool]
    gate: asyncio.Event = field(default_factory=asyncio.Event)


class FakeApi:
    """``KubeApi.request`` without a server. Every call is recorded in ``calls`` in the order it
    was made; a call yields to the event loop once before it is answered, as a real one does."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._landed = itertools.count()
        self._rules: dict[tuple[str, str], _Rule] = {}
        #: GET of a pod answers this (namespace, name) -> object; 404 if absent.
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self._holds: list[_Hold] = []
        #: Requests in flight now, and the most ever in flight, per kind ("bind", "other").
        self.active: dict[str, int] = {"bind": 0, "other": 0}
        self.peak: dict[str, int] = {"bind": 0, "other": 0}
        #: Extra event-loop turns a call takes before it is answered (latency), if set.
        self.latency: Callable[[Call], int] | None = None
        #: Connections asked to be opened ahead of writes (``warm_writes``), per call.
        self.warmed: list[int] = []

    # -- programming -------------------------------------------------------------------------

    def answer(self, method: str, path: str, *answers: Answer) -> None:
        """Answers to ``method path`` in turn (the last one repeats): an exception is raised,
        a callable is called with the Call, anything else is returned."""
        self._rules[(method, path)] = _Rule(list(answers))

    def answer_bind(self, name: str, *answers: Answer, namespace: str = NS) -> None:
        self.answer("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", *answers)

    def hold(self, matches: Callable[[Call], bool]) -> asyncio.Event:
        """Requests for which ``matches`` is true wait until the returned event is set."""
        hold = _Hold(matches)
        self._holds.append(hold)
        return hold.gate

    def release_all(self) -> None:
        for hold in self._holds:
            hold.gate.set()

    # -- KubeApi -----------------------------------------------------------------------------

    async def warm_writes(self, count: int) -> int:
        self.warmed.append(count)
        return count

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = 30.0,
    ) -> Any:
        call = Call(method, path, body, content_type, params)
        self.calls.append(call)
        kind = "bind" if _BINDING.match(path) else "other"
        self.active[kind] += 1
        self.peak[kind] = max(self.peak[kind], self.active[kind])
        try:
            for _ in range(1 + (self.latency(call) if self.latency else 0)):
                await asyncio.sleep(0)
            for hold in self._holds:
                if hold.matches(call):
                    await hold.gate.wait()
            reply = self._reply(call)
        except BaseException as error:
            call.outcome = repr(error)
            raise
        finally:
            self.active[kind] -= 1
        call.outcome = "ok"
        call.landed = next(self._landed)
        return reply

    def _reply(self, call: Call) -> Any:
        rule = self._rules.get((call.method, call.path))
        if rule is not None:
            answer = rule.next()
            if isinstance(answer, BaseException):
                raise answer
            return answer(call) if callable(answer) else answer
        if call.method == "GET":
            match = _POD.match(call.path)
            if match and (match[1], match[2]) in self.pods:
                return self.pods[(match[1], match[2])]
            raise ApiError(404, "NotFound", f"{call.path} not found")
        return {}

    # -- reading what was written ------------------------------------------------------------

    @property
    def idle(self) -> bool:
        return not any(self.active.values())

    def landed(self) -> list[Call]:
        """The calls that succeeded, in the order they were answered."""
        return sorted((call for call in self.calls if call.ok), key=lambda call: call.landed)

    def binds(self, *, landed: bool = True) -> list[tuple[str, str]]:
        """(pod name, node) of every binding POST (that succeeded, by default)."""
        return [
            (call.body["metadata"]["name"], call.body["target"]["name"])
            for call in (self.landed() if landed else self.calls)
            if _BINDING.match(call.path)
        ]

    def bind_attempts(self, name: str, namespace: str = NS) -> int:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        return sum(1 for call in self.calls if call.path == path)

    def conditions(self, name: str, namespace: str = NS) -> list[dict[str, Any]]:
        """PodScheduled conditions written to a pod, in the order they landed."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        return [
            condition
            for call in self.landed()
            if call.path == path and call.method == "PATCH"
            for condition in call.body["status"]["conditions"]
        ]

    def condition(self, name: str, namespace: str = NS) -> dict[str, Any] | None:
        """The PodScheduled condition a pod shows now (the last written), if any."""
        written = self.conditions(name, namespace)
        return written[-1] if written else None

    def annotation_patches(self, name: str, namespace: str = NS) -> list[dict[str, Any]]:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        return [
            call.body["metadata"]["annotations"]
            for call in self.landed()
            if call.path == path and call.method == "PATCH"
        ]

    def events(self, name: str | None = None, reason: str | None = None) -> list[dict[str, Any]]:
        """Events posted (and accepted), in the order they landed, optionally for one object
        and one reason."""
        return [
            call.body
            for call in self.landed()
            if _EVENTS.match(call.path)
            and call.method == "POST"
            and (name is None or call.body["involvedObject"]["name"] == name)
            and (reason is None or call.body["reason"] == reason)
        ]

    def writes_to(self, name: str, namespace: str = NS) -> list[Call]:
        """Every write about one pod (status, annotations, Events), landed or not."""
        pod = f"/api/v1/namespaces/{namespace}/pods/{name}"
        return [
            call
            for call in self.calls
            if (call.path in (pod, pod + "/status") and call.method == "PATCH")
            or (_EVENTS.match(call.path) and call.body["involvedObject"]["name"] == name)
        ]

    def custom_status_patches(self, plural: str, name: str) -> list[dict[str, Any]]:
        return [
            call.body["status"]
            for call in self.landed()
            if call.path.startswith("/apis/") and call.path.endswith(f"/{plural}/{name}/status")
        ]
