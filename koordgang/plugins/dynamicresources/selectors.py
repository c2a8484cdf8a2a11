"""Does a device serve a request? Its class's selectors and the request's own, in CEL.

A selector's answer depends on the device alone, so it is kept on the device's record
(``Device.answers``) until the device's slice changes: 1,000 nodes of 8 devices cost 8,000
evaluations once, not per pod. A selector that does not compile never matches. One that fails
on a device at run time (a missing attribute, say) is an error in what the pod or the class
asks, as Kubernetes treats it: the pod's attempt fails with the expression, its object and the
device named, and is retried with backoff. Both are remembered here, with the object the
expression came from, so that pods can be told.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from koordgang.model.cel import CelError, Selector, compile_selector, device_facts
from koordgang.model.dra import DeviceClassInfo, DeviceId, SubRequest
from koordgang.state.dra import Device

log = structlog.get_logger("koordgang.dra")


@dataclass(frozen=True, slots=True)
class CelProblem:
    """A selector that did not compile, or failed on a device."""

    expression: str
    #: Where it comes from: ``DeviceClass gpu`` or ``ResourceClaim ns/x request "r"``.
    source: str
    error: str
    #: The device it failed on ("" for a compile error).
    device: str = ""
    device_id: DeviceId | None = None

    def describe(self) -> str:
        where = f" on device {self.device}" if self.device else ""
        kind = "fails" if self.device else "does not compile"
        return f"CEL selector {self.expression!r} of {self.source} {kind}{where}: {self.error}"


class SelectorCache:
    """Compiled selectors by expression, and what went wrong with them."""

    def __init__(self) -> None:
        self._compiled: dict[str, Selector | CelProblem] = {}
        #: The most recent problems, by (expression, source), for explanations and logs.
        self.problems: dict[tuple[str, str], CelProblem] = {}

    def compiled(self, expression: str, source: str) -> Selector | CelProblem:
        known = self._compiled.get(expression)
        if known is None:
            try:
                known = compile_selector(expression)
            except CelError as error:
                known = CelProblem(expression, source, str(error))
            if len(self._compiled) > 4096:
                self._compiled.clear()
            self._compiled[expression] = known
        if isinstance(known, CelProblem) and (expression, source) not in self.problems:
            problem = CelProblem(expression, source, known.error)
            self.problems[(expression, source)] = problem
            log.warning("device selector cannot be used", problem=problem.describe())
        return known

    def matches(
        self,
        device: Device,
        expression: str,
        source: str,
        errors: list[CelProblem] | None = None,
    ) -> bool:
        """Whether ``device`` passes the selector; a run-time error is added to ``errors``."""
        answer = device.answers.get(expression)
        if answer is None:
            answer = self._evaluate(device, expression, source)
            device.answers[expression] = answer
        elif isinstance(answer, str):
            self._note(device, expression, source, answer)
        if isinstance(answer, str) and errors is not None and self._ran(expression):
            errors.append(CelProblem(expression, source, answer, str(device.id), device.id))
        return answer is True

    def _ran(self, expression: str) -> bool:
        """The expression compiled (its errors are run-time ones, not a compile error)."""
        return not isinstance(self._compiled.get(expression), CelProblem)

    def standing(
        self, sources: Iterable[str], lookup: Callable[[DeviceId], Device | None]
    ) -> CelProblem | None:
        """A run-time error met earlier on a device by an expression of these sources that
        still holds (the device's slice did not change since)."""
        wanted = set(sources)
        for (expression, source), problem in self.problems.items():
            if source not in wanted or problem.device_id is None:
                continue
            device = lookup(problem.device_id)
            if device is not None and isinstance(device.answers.get(expression), str):
                return problem
        return None

    def _evaluate(self, device: Device, expression: str, source: str) -> bool | str:
        selector = self.compiled(expression, source)
        if isinstance(selector, CelProblem):
            return selector.error
        if device.facts is None:
            device.facts = device_facts(device.id.driver, device.spec.raw)
        try:
            return bool(selector.matches(device.facts))
        except CelError as error:
            message = str(error)
            self._note(device, expression, source, message)
            return message

    def _note(self, device: Device, expression: str, source: str, error: str) -> None:
        key = (expression, source)
        if key not in self.problems:
            if len(self.problems) > 256:
                self.problems.clear()
            problem = CelProblem(expression, source, error, str(device.id), device.id)
            self.problems[key] = problem
            # Once per expression and object: the device does not match, the pods say why.
            log.warning("device selector failed on a device", problem=problem.describe())

    def problems_of(self, sources: Iterable[tuple[str, str]]) -> list[CelProblem]:
        return [p for key in sources if (p := self.problems.get(key)) is not None]


def class_source(name: str) -> str:
    return f"DeviceClass {name}"


def request_source(claim: str, request: str) -> str:
    return f'ResourceClaim {claim} request "{request}"'


def serves(
    selectors: SelectorCache,
    device: Device,
    device_class: DeviceClassInfo,
    alternative: SubRequest,
    claim: str,
    request: str,
    errors: list[CelProblem] | None = None,
) -> bool:
    """Whether ``device`` serves ``alternative`` (of ``request`` in ``claim``): a device
    koordgang allocates, passing its class's selectors and the request's. Run-time errors of
    the selectors are added to ``errors``."""
    if device.spec.unsupported:
        return False
    for expression in device_class.selectors:
        if not selectors.matches(device, expression, class_source(device_class.name), errors):
            return False
    source = request_source(claim, request)
    return all(selectors.matches(device, e, source, errors) for e in alternative.selectors)
