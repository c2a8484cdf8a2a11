"""The error texts of device selectors: the CEL library's compile and runtime errors in
Kubernetes' words, one line each, and what koordgang refuses by name (Kubernetes' functions
it does not evaluate)."""

from __future__ import annotations

import re

__all__ = [
    "UNSUPPORTED_FUNCTIONS",
    "compile_message",
    "is_unsupported",
    "missing_key",
    "runtime_message",
]

# Functions of Kubernetes' base environment that koordgang does not implement (yet): an
# expression naming one is refused at compile time instead of failing per device.
UNSUPPORTED_FUNCTIONS = frozenset(
    {
        # k8s.io/apiserver/pkg/cel/library: URLs, IP, CIDR, Format
        "url",
        "isURL",
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
        "getQuery",
        "ip",
        "isIP",
        "ip.isCanonical",
        "family",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
        "cidr",
        "isCIDR",
        "containsIP",
        "containsCIDR",
        "prefixLength",
        "masked",
        "format.named",
        "validate",
        # Two-variable comprehensions building maps: cel-expr-python 0.1.3 compiles them
        # but cannot plan them ("cel.@mapInsert").
        "transformMap",
        "transformMapEntry",
    }
)

_STATUS = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r"\s*\[[A-Z_]+\]\s*$")
_MISSING_KEY = re.compile(r'^Key not found in map : "(?P<key>(?:[^"\\]|\\.)*)"$')
_NO_OVERLOAD = re.compile(r"^No matching overloads found : (?P<call>.*)$")
_COMPILE_ISSUE = re.compile(r"ERROR: <input>:(?P<line>\d+):(?P<column>\d+): (?P<message>.*)")
_UNDECLARED = re.compile(r"undeclared reference to '(?P<name>[^']*)'")
_CROSS_NUMERIC = re.compile(
    r"found no matching overload for '_(?:<|<=|>|>=)_' applied to "
    r"'\((?P<left>int|uint|double), (?P<right>int|uint|double)\)'"
)


def missing_key(message: str) -> str | None:
    """The key of a "no such key" runtime message (as :func:`runtime_message` words it)."""
    return message.removeprefix("no such key: ") if message.startswith("no such key: ") else None


def runtime_message(raw: str) -> str:
    """A library runtime error in Kubernetes' words, without status codes."""
    text = _STATUS_SUFFIX.sub("", _STATUS.sub("", raw.strip()))
    if match := _MISSING_KEY.match(text):
        return "no such key: " + match["key"].replace('\\"', '"').replace("\\\\", "\\")
    if match := _NO_OVERLOAD.match(text):
        return "no such overload: " + match["call"]
    return text


def compile_message(raw: str) -> str:
    """A library compile error as one line: each issue with its line:column, "; "-joined."""
    issues: list[str] = []
    for match in _COMPILE_ISSUE.finditer(raw):
        where = f"{match['line']}:{match['column']}"
        # The container is always the root one here: naming it says nothing.
        message = match["message"].replace(" (in container '')", "").strip()
        undeclared = _UNDECLARED.search(message)
        if undeclared and is_unsupported(undeclared["name"]):
            return f"koordgang cannot evaluate CEL function '{undeclared['name']}' yet"
        cross = _CROSS_NUMERIC.search(message)
        if cross and cross["left"] != cross["right"]:
            return (
                f"koordgang cannot compare {cross['left']} with {cross['right']} yet"
                f" (at {where}): convert one side, e.g. double(x)"
            )
        issues.append(f"{where}: {message}")
    if not issues:
        return runtime_message(raw)
    return "; ".join(issues)


def is_unsupported(name: str) -> bool:
    """Whether ``name`` is a Kubernetes CEL function that koordgang refuses."""
    return name in UNSUPPORTED_FUNCTIONS or name.startswith("format.")
