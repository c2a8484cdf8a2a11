"""The CEL environment of device selectors: cel-expr-python plus Kubernetes' libraries, and the
table that declares each library function to the checker.

The language itself, ``cel.bind``, optional syntax, the strings (version 2), sets, lists
(version 2) and two-variable comprehension extensions are cel-cpp's own, switched on through
the library's environment configuration. What Kubernetes adds on top (quantities, semantic
versions, its list functions, ``find``/``findAll``) is declared here and implemented in Python,
one module per Kubernetes library (``quantity``, ``semver``, ``ordering``, ``lists``,
``regex``); each call is charged to the cost guard (``cost.py``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from cel_expr_python import cel

from koordgang.model.cel import lists, ordering, quantity, regex, semver
from koordgang.model.cel.cost import counted

__all__ = ["device_env"]

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

_STRING = cel.Type.STRING
_INT = cel.Type.INT
_BOOL = cel.Type.BOOL
_DYN = cel.Type.DYN
_LIST = cel.Type.LIST
# The CEL type of both quantities and versions (see values.py): a tagged map.
_TAGGED = cel.Type.Map(cel.Type.STRING, cel.Type.STRING)


def _member(overload: str, returns: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, returns, params, is_member=True, impl=counted(impl))


def _global(overload: str, returns: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, returns, params, impl=counted(impl))


def _declarations() -> list[Any]:
    fn = cel.FunctionDecl
    return [
        fn("quantity", [_global("string_to_quantity", _TAGGED, [_STRING], quantity.quantity)]),
        fn("isQuantity", [_global("is_quantity_string", _BOOL, [_STRING], quantity.is_quantity)]),
        fn(
            "sign",
            [
                # Kubernetes declares sign(q); its documentation shows q.sign(). Both work.
                _global("quantity_sign", _INT, [_TAGGED], quantity.sign),
                _member("quantity_sign_member", _INT, [_TAGGED], quantity.sign),
            ],
        ),
        fn(
            "isGreaterThan",
            [
                _member(
                    "tagged_is_greater_than", _BOOL, [_TAGGED, _TAGGED], ordering.is_greater_than
                )
            ],
        ),
        fn(
            "isLessThan",
            [_member("tagged_is_less_than", _BOOL, [_TAGGED, _TAGGED], ordering.is_less_than)],
        ),
        fn(
            "compareTo",
            [_member("tagged_compare_to", _INT, [_TAGGED, _TAGGED], ordering.compare_to)],
        ),
        fn(
            "asApproximateFloat",
            [
                _member(
                    "quantity_get_float", cel.Type.DOUBLE, [_TAGGED], quantity.as_approximate_float
                )
            ],
        ),
        fn("asInteger", [_member("quantity_get_int", _INT, [_TAGGED], quantity.as_integer)]),
        fn("isInteger", [_member("quantity_is_integer", _BOOL, [_TAGGED], quantity.is_integer)]),
        fn(
            "add",
            [
                _member("quantity_add", _TAGGED, [_TAGGED, _TAGGED], quantity.add),
                _member("quantity_add_int", _TAGGED, [_TAGGED, _INT], quantity.add),
            ],
        ),
        fn(
            "sub",
            [
                _member("quantity_sub", _TAGGED, [_TAGGED, _TAGGED], quantity.sub),
                _member("quantity_sub_int", _TAGGED, [_TAGGED, _INT], quantity.sub),
            ],
        ),
        fn(
            "semver",
            [
                _global("string_to_semver", _TAGGED, [_STRING], semver.semver),
                _global("string_bool_to_semver", _TAGGED, [_STRING, _BOOL], semver.semver),
            ],
        ),
        fn(
            "isSemver",
            [
                _global("is_semver_string", _BOOL, [_STRING], semver.is_semver),
                _global("is_semver_string_bool", _BOOL, [_STRING, _BOOL], semver.is_semver),
            ],
        ),
        fn("major", [_member("semver_major", _INT, [_TAGGED], semver.major)]),
        fn("minor", [_member("semver_minor", _INT, [_TAGGED], semver.minor)]),
        fn("patch", [_member("semver_patch", _INT, [_TAGGED], semver.patch)]),
        # The library has no type parameters: list functions take list(dyn) and return dyn.
        fn("isSorted", [_member("list_is_sorted", _BOOL, [_LIST], lists.is_sorted)]),
        fn("sum", [_member("list_sum", _DYN, [_LIST], lists.sum_of)]),
        fn("min", [_member("list_min", _DYN, [_LIST], lists.min_of)]),
        fn("max", [_member("list_max", _DYN, [_LIST], lists.max_of)]),
        fn("indexOf", [_member("list_a_index_of_int", _INT, [_LIST, _DYN], lists.index_of)]),
        fn(
            "lastIndexOf",
            [_member("list_a_last_index_of_int", _INT, [_LIST, _DYN], lists.last_index_of)],
        ),
        fn("find", [_member("string_find_string", _STRING, [_STRING, _STRING], regex.find)]),
        fn(
            "findAll",
            [
                _member(
                    "string_find_all_string",
                    cel.Type.List(_STRING),
                    [_STRING, _STRING],
                    regex.find_all,
                ),
                _member(
                    "string_find_all_string_int",
                    cel.Type.List(_STRING),
                    [_STRING, _STRING, _INT],
                    regex.find_all,
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
