"""The CEL environment of device selectors: cel-expr-python plus Kubernetes' libraries.

The language itself, ``cel.bind``, optional syntax, the strings (version 2), sets, lists
(version 2) and two-variable comprehension extensions are cel-cpp's own, switched on through
the library's environment configuration. What Kubernetes adds on top (quantities, semantic
versions, its list functions, ``find``/``findAll``) is declared here and implemented in Python.

Implementations raise :class:`FunctionFailed`; the library turns the exception into a CEL
error value, which propagates like any CEL error (``error || true`` is still true).
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import cache
from typing import Any

from cel_expr_python import cel

from koordgang.model.cel.values import (
    INT64_MAX,
    INT64_MIN,
    Semver,
    SemverError,
    as_quantity,
    as_semver,
    normalize_semver,
    parse_k8s_quantity,
    parse_semver,
    quantity_approximate_float,
    quantity_as_int64,
    quantity_value,
    semver_value,
)
from koordgang.model.quantity import QuantityError

__all__ = [
    "UNSUPPORTED_FUNCTIONS",
    "FunctionFailed",
    "budget",
    "compile_message",
    "device_env",
    "runtime_message",
]

# Extensions that Kubernetes' base environment has and cel-cpp implements natively. Kubernetes
# uses lists version 3, which only adds cost estimates to version 2.
_EXTENSIONS = """
extensions:
  - name: "bindings"
  - name: "optional"
  - name: "strings"
    version: 2
  - name: "sets"
  - name: "lists"
    version: 2
  - name: "two-var-comprehensions"
"""

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


class FunctionFailed(Exception):
    """A Kubernetes library function failed for its arguments; the message is the CEL error."""


# --- cost guard -------------------------------------------------------------------------


class _Budget:
    """Counts calls into the Python functions of one evaluation.

    cel-expr-python has no cost accounting, so the Kubernetes limit (1,000,000 units, at least
    one per function call) cannot be enforced as such. Each call below costs at least one
    unit in Kubernetes too, so refusing past the limit never refuses an evaluation Kubernetes
    would finish. Once spent, every further call fails at once, which keeps a runaway
    comprehension from calling Python millions of times more.
    """

    __slots__ = ("calls", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    @property
    def exceeded(self) -> bool:
        return self.calls > self.limit

    def charge(self) -> None:
        self.calls += 1
        if self.calls > self.limit:
            raise FunctionFailed("actual cost limit exceeded")


# One evaluation at a time: the model layer runs on the scheduler's single thread.
budget = _Budget(limit=1_000_000)


def _counted(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        budget.charge()
        return function(*args)

    call.__name__ = function.__name__
    return call


# --- quantities -------------------------------------------------------------------------


def _quantity(text: str) -> dict[str, str]:
    try:
        return quantity_value(parse_k8s_quantity(text))
    except QuantityError as exc:
        raise FunctionFailed(str(exc)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_k8s_quantity(text)
    except QuantityError:
        return False
    return True


def _need_quantity(value: Any, function: str) -> Fraction:
    amount = as_quantity(value)
    if amount is None:
        raise FunctionFailed(f"no such overload: {function} needs a quantity")
    return amount


def _sign(value: Any) -> int:
    amount = _need_quantity(value, "sign")
    return (amount > 0) - (amount < 0)


def _as_integer(value: Any) -> int:
    whole = quantity_as_int64(_need_quantity(value, "asInteger"))
    if whole is None:
        raise FunctionFailed("cannot convert value to integer")
    return whole


def _is_integer(value: Any) -> bool:
    return quantity_as_int64(_need_quantity(value, "isInteger")) is not None


def _as_approximate_float(value: Any) -> float:
    return quantity_approximate_float(_need_quantity(value, "asApproximateFloat"))


def _add(value: Any, other: Any) -> dict[str, str]:
    amount = _need_quantity(value, "add")
    if isinstance(other, int) and not isinstance(other, bool):
        return quantity_value(amount + other)
    return quantity_value(amount + _need_quantity(other, "add"))


def _sub(value: Any, other: Any) -> dict[str, str]:
    amount = _need_quantity(value, "sub")
    if isinstance(other, int) and not isinstance(other, bool):
        return quantity_value(amount - other)
    return quantity_value(amount - _need_quantity(other, "sub"))


# --- comparisons shared by quantities and versions ---------------------------------------


def _compare(value: Any, other: Any, function: str) -> int:
    # Both types share one CEL representation (a tagged map), so one overload serves both
    # and the tag decides; mixing the two is Kubernetes' "no such overload".
    left_q, right_q = as_quantity(value), as_quantity(other)
    if left_q is not None and right_q is not None:
        return (left_q > right_q) - (left_q < right_q)
    left_v, right_v = as_semver(value), as_semver(other)
    if left_v is not None and right_v is not None:
        return left_v.compare(right_v)
    raise FunctionFailed(f"no such overload: {function} needs two quantities or two versions")


def _is_greater_than(value: Any, other: Any) -> bool:
    return _compare(value, other, "isGreaterThan") == 1


def _is_less_than(value: Any, other: Any) -> bool:
    return _compare(value, other, "isLessThan") == -1


def _compare_to(value: Any, other: Any) -> int:
    return _compare(value, other, "compareTo")


# --- semantic versions ------------------------------------------------------------------


def _semver(text: str, normalize: bool = False) -> dict[str, str]:
    try:
        return semver_value(normalize_semver(text) if normalize else parse_semver(text))
    except SemverError as exc:
        raise FunctionFailed(str(exc)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        normalize_semver(text) if normalize else parse_semver(text)
    except SemverError:
        return False
    return True


def _need_semver(value: Any, function: str) -> Semver:
    version = as_semver(value)
    if version is None:
        raise FunctionFailed(f"no such overload: {function} needs a semver")
    return version


def _int64(number: int) -> int:
    # blang keeps uint64 parts; Kubernetes hands them to CEL as int64.
    if number > INT64_MAX:
        raise FunctionFailed("integer overflow")
    return number


def _major(value: Any) -> int:
    return _int64(_need_semver(value, "major").major)


def _minor(value: Any) -> int:
    return _int64(_need_semver(value, "minor").minor)


def _patch(value: Any) -> int:
    return _int64(_need_semver(value, "patch").patch)


# --- Kubernetes' list functions -----------------------------------------------------------


def _comparable(items: list[Any], function: str) -> list[Any]:
    for item in items:
        if isinstance(item, dict | list) or item is None:
            raise FunctionFailed(f"no such overload: {function} needs a list of comparable values")
    return items


def _less(left: Any, right: Any) -> bool:
    # CEL orders bools, numbers (across int, uint and double), strings and bytes; a mix of
    # kinds has no order, as in Kubernetes.
    if isinstance(left, bool) != isinstance(right, bool):
        raise FunctionFailed("no such overload: values of different types have no order")
    try:
        return bool(left < right)
    except TypeError:
        raise FunctionFailed("no such overload: values of different types have no order") from None


def _is_sorted(items: list[Any]) -> bool:
    _comparable(items, "isSorted")
    return not any(_less(later, earlier) for earlier, later in itertools.pairwise(items))


def _sum(items: list[Any]) -> Any:
    if any(isinstance(item, bool) or not isinstance(item, int | float) for item in items):
        raise FunctionFailed(
            "koordgang cannot evaluate sum() over anything but int, uint and double yet"
        )
    if any(isinstance(item, float) for item in items):
        # One addition after the other, as Kubernetes adds: no compensated summation.
        total_float = 0.0
        for item in items:
            total_float += item
        return total_float
    total = 0
    for item in items:
        total += item
        if not INT64_MIN <= total <= INT64_MAX:
            raise FunctionFailed("integer overflow")
    return total


# Values the library passes in to Python but cannot take back as a result.
_UNRETURNABLE = (datetime.timedelta, datetime.datetime)


def _extreme(items: list[Any], function: str, prefer_later: Callable[[Any, Any], bool]) -> Any:
    _comparable(items, function)
    if not items:
        raise FunctionFailed(f"{function} called on empty list")
    best = items[0]
    if isinstance(best, _UNRETURNABLE):
        raise FunctionFailed(f"koordgang cannot evaluate {function}() over durations or times yet")
    for item in items[1:]:
        if prefer_later(best, item):
            best = item
    return best


def _min(items: list[Any]) -> Any:
    return _extreme(items, "min", lambda best, item: _less(item, best))


def _max(items: list[Any]) -> Any:
    return _extreme(items, "max", lambda best, item: _less(best, item))


def _index_of(items: list[Any], wanted: Any) -> int:
    return next((i for i, item in enumerate(items) if cel_equal(item, wanted)), -1)


def _last_index_of(items: list[Any], wanted: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if cel_equal(items[i], wanted):
            return i
    return -1


def cel_equal(left: Any, right: Any) -> bool:
    """CEL's equality of two values as the library hands them to Python."""
    # bool is an int to Python but not to CEL; numbers compare across int, uint and double.
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(cel_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(cel_equal(v, right[k]) for k, v in left.items())
    if isinstance(left, bytes | bytearray) and isinstance(right, bytes | bytearray):
        return bytes(left) == bytes(right)
    return type(left) is type(right) and bool(left == right)


# --- regular expressions: find, findAll ----------------------------------------------------
#
# Kubernetes runs Go's regexp (RE2 syntax and semantics). cel-cpp's own regex extension runs
# RE2 too, so find/findAll are built on it (in a private environment: Kubernetes does not
# offer ``regex.extract`` to selectors) rather than on Python's ``re``, whose syntax and
# semantics differ ($ before a final newline, Unicode \w, [[:alpha:]], ...).

# RE2 accepts repetition counts up to 1000: the prefix that pins a search position uses one.
_MAX_FIND_ALL_TEXT = 1000


@cache
def _regex_programs() -> tuple[Any, Any]:
    env = cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(
            'extensions:\n  - name: "bindings"\n  - name: "optional"\n  - name: "regex"\n'
        ),
        variables={"s": cel.Type.STRING, "p": cel.Type.STRING},
    )
    extract = env.compile("cel.bind(r, regex.extract(s, p), r.hasValue() ? [r.value()] : [])")
    validate = env.compile('"".matches(p)')
    return extract, validate


def _run(program: Any, text: str, pattern: str) -> Any:
    result = program.eval(data={"s": text, "p": pattern})
    if result.type() == cel.Type.ERROR:
        raise FunctionFailed("Illegal regex: " + runtime_message(str(result.value())))
    return result.plain_value()


def _extract(text: str, pattern: str) -> str | None:
    found = _run(_regex_programs()[0], text, pattern)
    return str(found[0]) if found else None


def _validated(pattern: str) -> str:
    _run(_regex_programs()[1], "", pattern)
    return uncaptured(pattern)


def uncaptured(pattern: str) -> str:
    """``pattern`` with every capturing group made non-capturing (same matches in RE2, which
    has no back-references), so that the helper can wrap it in the one group it reads."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        char = pattern[i]
        if char == "\\":
            if pattern.startswith("\\Q", i):  # literal text up to \E
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
            else:
                out.append(pattern[i : i + 2])
                i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
                out.append(pattern[i : end + 2])  # [:alpha:] holds a "]" that closes nothing
                i = end + 2
                continue
            in_class = char != "]"
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            start = i + 1
            if pattern.startswith("^", start):
                start += 1
            if pattern.startswith("]", start):  # a leading "]" is a literal
                start += 1
            out.append(pattern[i:start])
            i = start
            continue
        if char == "(":
            named = re.match(r"\(\?P?<[^>]*>", pattern[i:])
            if named:
                out.append("(?:")
                i += len(named.group())
            elif pattern.startswith("(?", i):
                out.append("(")
                i += 1
            else:
                out.append("(?:")
                i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _find(text: str, pattern: str) -> str:
    found = _extract(text, "(" + _validated(pattern) + ")")
    return found or ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    inner = _validated(pattern)
    if limit == 0:
        return []
    if len(text) > _MAX_FIND_ALL_TEXT:
        raise FunctionFailed(
            f"koordgang cannot evaluate findAll() on text longer than {_MAX_FIND_ALL_TEXT}"
            " characters yet"
        )
    found: list[str] = []
    for match in _go_find_all(text, inner):
        found.append(match)
        if len(found) == limit:
            break
    return found


def _go_find_all(text: str, inner: str) -> Iterator[str]:
    # Go's FindAllString: successive leftmost-first matches; after an empty match the search
    # moves on one character, and an empty match right where the previous match ended is
    # dropped. A search from ``pos`` keeps the whole text as context (for ^, \b) by consuming
    # exactly ``pos`` characters first; the lazy ``.*?`` (across newlines too) then finds the
    # leftmost start.
    pos, previous_end = 0, -1
    while pos <= len(text):
        prefix = _extract(text, rf"\A((?s:.{{{pos}}}.*?))(?:{inner})")
        if prefix is None:
            return
        start = len(prefix)
        match = _extract(text, rf"\A(?s:.{{{start}}})({inner})") or ""
        end = start + len(match)
        if end == pos:  # an empty match where the search began
            accept = start != previous_end
            pos += 1
        else:
            accept = True
            pos = end
        previous_end = end
        if accept:
            yield match


# --- the environment ------------------------------------------------------------------------

_STRING = cel.Type.STRING
_INT = cel.Type.INT
_BOOL = cel.Type.BOOL
_DYN = cel.Type.DYN
_LIST = cel.Type.LIST
# The CEL type of both quantities and versions (see values.py): a tagged map.
_TAGGED = cel.Type.Map(cel.Type.STRING, cel.Type.STRING)


def _member(overload: str, returns: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, returns, params, is_member=True, impl=_counted(impl))


def _global(overload: str, returns: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, returns, params, impl=_counted(impl))


def _declarations() -> list[Any]:
    fn = cel.FunctionDecl
    return [
        fn("quantity", [_global("string_to_quantity", _TAGGED, [_STRING], _quantity)]),
        fn("isQuantity", [_global("is_quantity_string", _BOOL, [_STRING], _is_quantity)]),
        fn(
            "sign",
            [
                # Kubernetes declares sign(q); its documentation shows q.sign(). Both work.
                _global("quantity_sign", _INT, [_TAGGED], _sign),
                _member("quantity_sign_member", _INT, [_TAGGED], _sign),
            ],
        ),
        fn(
            "isGreaterThan",
            [_member("tagged_is_greater_than", _BOOL, [_TAGGED, _TAGGED], _is_greater_than)],
        ),
        fn(
            "isLessThan",
            [_member("tagged_is_less_than", _BOOL, [_TAGGED, _TAGGED], _is_less_than)],
        ),
        fn("compareTo", [_member("tagged_compare_to", _INT, [_TAGGED, _TAGGED], _compare_to)]),
        fn(
            "asApproximateFloat",
            [_member("quantity_get_float", cel.Type.DOUBLE, [_TAGGED], _as_approximate_float)],
        ),
        fn("asInteger", [_member("quantity_get_int", _INT, [_TAGGED], _as_integer)]),
        fn("isInteger", [_member("quantity_is_integer", _BOOL, [_TAGGED], _is_integer)]),
        fn(
            "add",
            [
                _member("quantity_add", _TAGGED, [_TAGGED, _TAGGED], _add),
                _member("quantity_add_int", _TAGGED, [_TAGGED, _INT], _add),
            ],
        ),
        fn(
            "sub",
            [
                _member("quantity_sub", _TAGGED, [_TAGGED, _TAGGED], _sub),
                _member("quantity_sub_int", _TAGGED, [_TAGGED, _INT], _sub),
            ],
        ),
        fn(
            "semver",
            [
                _global("string_to_semver", _TAGGED, [_STRING], _semver),
                _global("string_bool_to_semver", _TAGGED, [_STRING, _BOOL], _semver),
            ],
        ),
        fn(
            "isSemver",
            [
                _global("is_semver_string", _BOOL, [_STRING], _is_semver),
                _global("is_semver_string_bool", _BOOL, [_STRING, _BOOL], _is_semver),
            ],
        ),
        fn("major", [_member("semver_major", _INT, [_TAGGED], _major)]),
        fn("minor", [_member("semver_minor", _INT, [_TAGGED], _minor)]),
        fn("patch", [_member("semver_patch", _INT, [_TAGGED], _patch)]),
        # The library has no type parameters: list functions take list(dyn) and return dyn.
        fn("isSorted", [_member("list_is_sorted", _BOOL, [_LIST], _is_sorted)]),
        fn("sum", [_member("list_sum", _DYN, [_LIST], _sum)]),
        fn("min", [_member("list_min", _DYN, [_LIST], _min)]),
        fn("max", [_member("list_max", _DYN, [_LIST], _max)]),
        fn("indexOf", [_member("list_a_index_of_int", _INT, [_LIST, _DYN], _index_of)]),
        fn(
            "lastIndexOf",
            [_member("list_a_last_index_of_int", _INT, [_LIST, _DYN], _last_index_of)],
        ),
        fn("find", [_member("string_find_string", _STRING, [_STRING, _STRING], _find)]),
        fn(
            "findAll",
            [
                _member(
                    "string_find_all_string",
                    cel.Type.List(_STRING),
                    [_STRING, _STRING],
                    _find_all,
                ),
                _member(
                    "string_find_all_string_int",
                    cel.Type.List(_STRING),
                    [_STRING, _STRING, _INT],
                    _find_all,
                ),
            ],
        ),
    ]


@cache
def device_env() -> Any:
    """The one CEL environment of device selectors (built on first use: about a millisecond)."""
    return cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(_EXTENSIONS),
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[cel.CelExtension("kubernetes", _declarations())],
    )


# --- messages ---------------------------------------------------------------------------------

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
