"""Device selectors: compile an expression once, evaluate it against many devices."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from koordgang.model.cel.cost import budget
from koordgang.model.cel.declarations import device_env
from koordgang.model.cel.errors import CelCompileError, CelRuntimeError
from koordgang.model.cel.messages import (
    compile_message,
    is_unsupported,
    missing_key,
    runtime_message,
)
from koordgang.model.cel.values import (
    INT64_MAX,
    INT64_MIN,
    SemverError,
    parse_k8s_quantity,
    parse_semver,
    quantity_value,
    semver_value,
)
from koordgang.model.dra.base import split_qualified
from koordgang.model.errors import show
from koordgang.model.quantity import QuantityError

__all__ = ["DeviceFacts", "Selector", "compile_selector", "device_facts"]

# resource.k8s.io/v1 CELSelectorExpressionMaxLength (bytes).
MAX_EXPRESSION_BYTES = 10 * 1024

# Without a cost limit, nesting is what makes an expression run away (ten 10-element lists
# nested seven deep is ten million steps); real selectors nest one or two deep.
MAX_COMPREHENSION_DEPTH = 3

# A device touches few domains; each retry below adds one (see Selector.matches).
_MAX_DOMAIN_RETRIES = 16

_SCALAR_FIELDS = ("int", "bool", "string", "version")
_LIST_FIELDS = ("ints", "bools", "strings", "versions")


# --- the device -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class DeviceFacts:
    """What a selector sees of one device. Build it once per device and reuse it for every
    selector: the conversion into CEL values happens here, not per evaluation."""

    driver: str
    # The value of the CEL variable ``device`` (domains -> ids -> values).
    device: Mapping[str, Any] = field(repr=False)
    # Why the device cannot be evaluated at all (an unsupported attribute value), or None.
    problem: str | None = None
    # The library's prepared variables for ``device``.
    activation: Any = field(default=None, repr=False)

    @property
    def domains(self) -> frozenset[str]:
        """Every domain the device has attributes or capacity in."""
        return frozenset(self.device["attributes"]) | frozenset(self.device["capacity"])


def device_facts(driver: str, device: Mapping[str, Any]) -> DeviceFacts:
    """The facts of one entry of a ResourceSlice's ``spec.devices`` (JSON as served).

    Never raises: a value that Kubernetes cannot hand to CEL is remembered, and every
    evaluation against the device then fails naming it, as Kubernetes fails the device.
    """
    problems: list[str] = []
    attributes = _by_domain(device, "attributes", driver, _attribute_value, problems)
    capacity = _by_domain(device, "capacity", driver, _capacity_value, problems)
    multiple = device.get("allowMultipleAllocations")
    if multiple is not None and not isinstance(multiple, bool):
        problems.append(f"allowMultipleAllocations: expected a bool, got {show(multiple)}")
    data = {
        "driver": driver,
        "allowMultipleAllocations": multiple is True,
        "attributes": attributes,
        "capacity": capacity,
    }
    problem = problems[0] if problems else None
    activation = None if problem else _activation(data)
    return DeviceFacts(driver=driver, device=data, problem=problem, activation=activation)


def _activation(data: Mapping[str, Any]) -> Any:
    return device_env().Activation({"device": data})


def _by_domain(
    device: Mapping[str, Any],
    member: str,
    driver: str,
    value_of: Callable[[Any], Any],
    problems: list[str],
) -> dict[str, dict[str, Any]]:
    """The device's ``attributes`` or ``capacity`` as domain -> id -> CEL value; a value CEL
    cannot be given is added to ``problems``, named."""
    raw_map = device.get(member)
    found: dict[str, dict[str, Any]] = {}
    if raw_map is None:
        return found
    if not isinstance(raw_map, Mapping):
        problems.append(f"{member}: expected an object, got {show(raw_map)}")
        return found
    kind = "attribute" if member == "attributes" else member
    for name, raw in raw_map.items():
        domain, key = split_qualified(str(name), driver)
        try:
            found.setdefault(domain, {})[key] = value_of(raw)
        except ValueError as exc:
            problems.append(f"{kind} {show(f'{domain}/{key}')}: {exc}")
    return found


def _attribute_value(raw: Any) -> Any:
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected an object, got {show(raw)}")
    # Kubernetes reads the first value set, in this order; validation allows only one.
    for kind in _SCALAR_FIELDS:
        value = raw.get(kind)
        if value is not None:
            return _scalar(kind, value)
    if any(raw.get(kind) is not None for kind in _LIST_FIELDS):
        raise ValueError(
            "list-typed attribute values are not supported (the DRAListTypeAttributes"
            " feature is off)"
        )
    raise ValueError("unsupported attribute value")


def _scalar(kind: str, value: Any) -> Any:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{show(value)} is not an integer")
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"{value} does not fit in int64")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{show(value)} is not a bool")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{show(value)} is not a string")
    if kind == "version":
        try:
            return semver_value(parse_semver(value))
        except SemverError as exc:
            raise ValueError(f"{show(value)} is not a semantic version: {exc}") from None
    return value


def _capacity_value(raw: Any) -> Any:
    if not isinstance(raw, Mapping) or raw.get("value") is None:
        raise ValueError(f"expected an object with a value, got {show(raw)}")
    value = raw["value"]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"{show(value)} is not a quantity")
    try:
        return quantity_value(parse_k8s_quantity(value))
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


# --- the selector --------------------------------------------------------------------------


class Selector:
    """A compiled device selector. Build it with :func:`compile_selector`."""

    __slots__ = ("_program", "expression")

    def __init__(self, expression: str, program: Any) -> None:
        self.expression = expression
        self._program = program

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"

    def matches(self, facts: DeviceFacts) -> bool:
        """Whether the device is selected; raises CelRuntimeError when evaluation fails."""
        if facts.problem is not None:
            raise CelRuntimeError(facts.problem)
        activation = facts.activation
        added: tuple[str, ...] = ()
        while True:
            try:
                return self._evaluate(activation)
            except CelRuntimeError as exc:
                # Kubernetes looks up a domain the device lacks as an empty map; this library
                # has no map with a default. A missing key that is not one of the device's
                # domains may be such a lookup: evaluate again with that domain present and
                # empty. If the key was an id, the same error comes back and is final.
                key = missing_key(str(exc))
                if (
                    key is None
                    or key in added
                    or key in facts.domains
                    or len(added) >= _MAX_DOMAIN_RETRIES
                ):
                    raise
                added = (*added, key)
                activation = _activation(_with_empty_domains(facts.device, added))

    def _evaluate(self, activation: Any) -> bool:
        budget.reset()
        # The library raises, instead of returning an error value, when it cannot convert a
        # value or plan a call.
        try:
            result = self._program.eval(activation)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise CelRuntimeError(runtime_message(str(exc))) from None
        if budget.exceeded:
            raise CelRuntimeError("actual cost limit exceeded")
        kind = result.type()
        if kind == cel.Type.ERROR:
            try:
                detail = str(result.value())
            except TypeError:
                # The library types the values it cannot hand to Python (optionals) as errors
                # whose value cannot be read either.
                raise CelRuntimeError(
                    "the expression must evaluate to a bool, not an optional"
                ) from None
            raise CelRuntimeError(runtime_message(detail))
        if kind != cel.Type.BOOL:
            raise CelRuntimeError(f"the expression must evaluate to a bool, not {_type_name(kind)}")
        return bool(result.value())


def _with_empty_domains(device: Mapping[str, Any], domains: tuple[str, ...]) -> dict[str, Any]:
    extra: dict[str, dict[str, Any]] = {domain: {} for domain in domains}
    return {
        **device,
        "attributes": {**extra, **device["attributes"]},
        "capacity": {**extra, **device["capacity"]},
    }


def _type_name(kind: Any) -> str:
    name = str(kind.name()).lower()
    return "quantity or semver (a map)" if name == "map<string, string>" else name


# --- compiling ------------------------------------------------------------------------------


def compile_selector(expression: str) -> Selector:
    """The compiled selector for ``expression``; raises CelCompileError. Compiled once: the
    same expression gives the same Selector object while it stays in the cache."""
    compiled = _compile_cached(expression)
    if isinstance(compiled, CelCompileError):
        raise compiled
    return compiled


@lru_cache(maxsize=4096)
def _compile_cached(expression: str) -> Selector | CelCompileError:
    # Failures are cached too: a broken selector is met again on every scheduling attempt.
    try:
        return _compile(expression)
    except CelCompileError as exc:
        return exc


def _compile(expression: str) -> Selector:
    size = len(expression.encode())
    if size > MAX_EXPRESSION_BYTES:
        raise CelCompileError(
            f"the expression is {size} bytes long, more than {MAX_EXPRESSION_BYTES}"
        )
    _refuse_unsupported(_code_only(expression))
    try:
        program = device_env().compile(expression)
    except RuntimeError as exc:
        raise CelCompileError(compile_message(str(exc))) from None
    kind = program.return_type()
    if kind not in (cel.Type.BOOL, cel.Type.DYN):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {_type_name(kind)}")
    return Selector(expression, program)


_MACRO_CALL = re.compile(
    r"\.\s*(?:all|exists|exists_one|existsOne|map|filter|transformList|transformMap"
    r"|transformMapEntry|sortBy)\s*$"
)
_CALLED_NAME = re.compile(r"(?<!\w)([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\(")
_OPTIONAL_DOMAIN = re.compile(r"\b(?:attributes|capacity)\s*(?:\[\s*\?|\.\s*\?)")


def _refuse_unsupported(code: str) -> None:
    """Refuse, by name, what the library would evaluate differently from Kubernetes."""
    for match in _CALLED_NAME.finditer(code):
        name = re.sub(r"\s+", "", match[1])
        for candidate in (name, name.rpartition(".")[2]):
            if is_unsupported(candidate):
                raise CelCompileError(f"koordgang cannot evaluate CEL function '{candidate}' yet")
    if _OPTIONAL_DOMAIN.search(code):
        # The retry that stands in for Kubernetes' empty default map cannot see these.
        raise CelCompileError(
            "koordgang cannot evaluate an optional lookup of a whole domain"
            ' (device.attributes[?"..."]) yet; look up the attribute itself'
            ' (device.attributes["..."].?name)'
        )
    depth, deepest, stack = 0, 0, []
    for i, char in enumerate(code):
        if char == "(":
            macro = bool(_MACRO_CALL.search(code, 0, i))
            stack.append(macro)
            depth += macro
            deepest = max(deepest, depth)
        elif char == ")" and stack:
            depth -= stack.pop()
    if deepest > MAX_COMPREHENSION_DEPTH:
        raise CelCompileError(
            f"koordgang cannot evaluate comprehensions nested {deepest} deep (at most"
            f" {MAX_COMPREHENSION_DEPTH}): it has no CEL cost limit to stop them"
        )


def _code_only(expression: str) -> str:
    """``expression`` with the contents of string literals and comments blanked out, so that
    the textual checks above see only code. Unterminated literals are left to the parser."""
    out: list[str] = []
    i, n = 0, len(expression)
    while i < n:
        if expression.startswith("//", i):
            end = expression.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        literal = _LITERAL_START.match(expression, i)
        if literal is None:
            out.append(expression[i])
            i += 1
            continue
        prefix, quote = literal["prefix"], literal["quote"]
        raw = "r" in prefix.lower()
        j = literal.end()
        while j < n and not expression.startswith(quote, j):
            j += 2 if (expression[j] == "\\" and not raw) else 1
        j = min(j + len(quote), n)
        out.append(expression[i : literal.end()] + " " * (j - len(quote) - literal.end()) + quote)
        i = j
    return "".join(out)


# A literal's prefix (r, b, rb, br in any case) must not be the tail of an identifier.
_LITERAL_START = re.compile(r"(?<![\w])(?P<prefix>[rRbB]{0,2})(?P<quote>'''|\"\"\"|'|\")")
