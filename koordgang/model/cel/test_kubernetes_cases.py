"""Expressions and the results Kubernetes' own tests expect for them (v0.36).

The facts come from k8s.io/dynamic-resource-allocation cel/compile_test.go (device selectors,
with the list-typed-attributes feature off) and k8s.io/apiserver pkg/cel/library
quantity_test.go and semver_test.go; the table is written here, not copied.
"""

from dataclasses import dataclass, field
from typing import Any

import pytest

from koordgang.model.cel import (
    CelCompileError,
    CelRuntimeError,
    compile_selector,
    device_facts,
)

DRIVER = "dra.example.com"


@dataclass(frozen=True)
class Case:
    expression: str
    attributes: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)
    driver: str = DRIVER
    matches: bool | None = None
    compile_error: str | None = None
    match_error: str | None = None


def string(value: str) -> dict[str, Any]:
    return {"string": value}


CASES: dict[str, Case] = {
    # compile_test.go
    "true": Case("true", matches=True),
    "false": Case("false", matches=False),
    "syntax error": Case("?!", compile_error="Syntax error"),
    "an int is no bool": Case("1", compile_error="must evaluate to bool or the unknown type"),
    "a missing domain, then a missing attribute": Case(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "the same by index": Case(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "a missing domain is not in attributes": Case(
        '"no-such-domain" in device.attributes', matches=False
    ),
    "a present domain is": Case(
        '"dra.example.com" in device.attributes',
        attributes={"dra.example.com/something": {"bool": True}},
        matches=True,
    ),
    "an empty driver name": Case('device.driver == ""', driver="", matches=True),
    "the driver name": Case('device.driver == "dra.example.com"', matches=True),
    "the driver qualifies a bare name": Case(
        'device.attributes["dra.example.com"].name',
        attributes={"name": {"bool": True}},
        matches=True,
    ),
    "the same by index ": Case(
        'device.attributes["dra.example.com"]["name"]',
        attributes={"name": {"bool": True}},
        matches=True,
    ),
    "bind": Case(
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        attributes={"name": {"bool": True}},
        matches=True,
    ),
    "a qualified name": Case(
        'device.attributes["other.example.com"].name',
        attributes={"other.example.com/name": {"bool": True}},
        matches=True,
    ),
    "int": Case(
        'device.attributes["dra.example.com"].name > 0',
        attributes={"name": {"int": 1}},
        matches=True,
    ),
    "string": Case(
        'device.attributes["dra.example.com"].name == "fish"',
        attributes={"name": string("fish")},
        matches=True,
    ),
    "version": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        attributes={"name": {"version": "1.0.0"}},
        matches=True,
    ),
    "version, normalized": Case(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true))'
        ' && isSemver("v1.0.0", true)',
        attributes={"name": {"version": "1.0.0"}},
        matches=True,
    ),
    "a list attribute with the feature off": Case(
        'device.attributes["dra.example.com"].names.size() == 2',
        attributes={"names": {"strings": ["a", "b"]}},
        match_error="list-typed attribute values are not supported",
    ),
    "quantity": Case(
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        capacity={"name": {"value": "1Mi"}},
        matches=True,
    ),
    "check positive": Case(
        '"name" in device.capacity["dra.example.com"]'
        ' && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        capacity={"name": {"value": "1Mi"}},
        matches=True,
    ),
    "check negative": Case(
        '!("name" in device.capacity["dra.example.com"])'
        ' || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        matches=True,
    ),
    "all": Case(
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        attributes={
            "bool": {"bool": True},
            "int": {"int": 1},
            "string": string("fish"),
            "version": {"version": "1.0.0"},
        },
        capacity={"quantity": {"value": "1Mi"}},
        matches=True,
    ),
    "many": Case(
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b'
        ' && device.attributes["dra.example.com"].c',
        attributes={"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        matches=True,
    ),
    "attribute domains": Case(
        'device.attributes.exists_one(x, x == "dra.example.com")',
        attributes={"services": string("some_example_value")},
        matches=True,
    ),
    "attribute ids": Case(
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        attributes={"services": string("some_example_value")},
        matches=True,
    ),
    "split an attribute": Case(
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        attributes={"services": string("some_example_value")},
        matches=True,
    ),
    "a regular expression on an attribute": Case(
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        attributes={"services": string("asymetric")},
        matches=True,
    ),
    "capacity domains": Case(
        'device.capacity.exists_one(x, x == "dra.example.com")',
        capacity={"memory": {"value": "1Mi"}},
        matches=True,
    ),
    "capacity ids": Case(
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        capacity={"memory": {"value": "1Mi"}},
        matches=True,
    ),
    "allowMultipleAllocations absent is false": Case(
        "device.allowMultipleAllocations == false", matches=True
    ),
    "map and filter an attribute domain": Case(
        'device.attributes["dra.example.com"].map(key, device.attributes["dra.example.com"][key]'
        " * 20).filter(e, e > 50).exists(e, e == 60)",
        attributes={"a": {"int": 1}, "b": {"int": 2}, "c": {"int": 3}},
        matches=True,
    ),
    # Kubernetes evaluates this one until its cost limit stops it; koordgang, which has no
    # cost limit, refuses the nesting up front.
    "expensive": Case(
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y,"
        " [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2,"
        " [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4,"
        " [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
        compile_error="comprehensions nested 7 deep",
    ),
    # quantity_test.go
    "quantity parse": Case('quantity("12Mi") == quantity("12582912")', matches=True),
    "quantity with an invalid suffix": Case(
        'quantity("10Mo") == quantity("1")', match_error="invalid quantity"
    ),
    "quantity with a suffix that passes the pattern": Case(
        'quantity("10Mm") == quantity("1")', match_error="invalid quantity"
    ),
    "isQuantity": Case(
        'isQuantity("20") && isQuantity("20M") && isQuantity("20Mi")'
        ' && !isQuantity("20Mo") && !isQuantity("10Mm")',
        matches=True,
    ),
    "isQuantity of a list": Case(
        "isQuantity([1, 2, 3])", compile_error="found no matching overload for 'isQuantity'"
    ),
    "quantity equality": Case(
        'quantity("200M") == quantity("200M")'
        ' && quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")'
        ' && quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M")',
        matches=True,
    ),
    "quantity inequality": Case('quantity("200M") == quantity("0.3G")', matches=False),
    "quantity less": Case(
        'quantity("50M").isLessThan(quantity("50Mi"))'
        ' && quantity("50M").isLessThan(quantity("100M"))'
        ' && !quantity("100M").isLessThan(quantity("50M"))',
        matches=True,
    ),
    "quantity greater": Case(
        'quantity("50Mi").isGreaterThan(quantity("50M"))'
        ' && quantity("150Mi").isGreaterThan(quantity("100Mi"))'
        ' && !quantity("50M").isGreaterThan(quantity("100M"))',
        matches=True,
    ),
    "quantity compareTo": Case(
        'quantity("200M").compareTo(quantity("0.2G")) == 0'
        ' && quantity("50M").compareTo(quantity("50Mi")) == -1'
        ' && quantity("50Mi").compareTo(quantity("50M")) == 1',
        matches=True,
    ),
    "quantity arithmetic": Case(
        'quantity("50k").add(quantity("20")) == quantity("50.02k")'
        ' && !quantity("50k").add(20).isLessThan(quantity("50020"))'
        ' && quantity("50k").sub(quantity("20")) == quantity("49.98k")'
        ' && quantity("50k").sub(20) == quantity("49980")'
        ' && quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980'
        ' && quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20',
        matches=True,
    ),
    "quantity asInteger": Case('quantity("50k").asInteger() == 50000', matches=True),
    "quantity asInteger out of range": Case(
        'quantity("9999999999999999999999999999999999999G").asInteger() == 0',
        match_error="cannot convert value to integer",
    ),
    "quantity isInteger": Case(
        '!quantity("9999999999999999999999999999999999999G").isInteger()'
        ' && quantity("50").isInteger()',
        matches=True,
    ),
    "quantity asApproximateFloat": Case(
        'quantity("50.703k").asApproximateFloat() == 50703.0', matches=True
    ),
    # semver_test.go
    "semver parse": Case('semver("1.2.3") == semver("1.2.3")', matches=True),
    "semver without a patch": Case(
        'semver("v1.0") == semver("1.0.0")', match_error="No Major.Minor.Patch elements found"
    ),
    "isSemver": Case(
        'isSemver("1.2.3-beta.1+build.1") && !isSemver("") && !isSemver("v1.0.0")'
        ' && !isSemver(" 1.0.0") && !isSemver("1. 0.0") && !isSemver("1.0.0 ")'
        ' && !isSemver("01.01.01") && !isSemver("1") && !isSemver("1.1")',
        matches=True,
    ),
    "isSemver normalized": Case(
        '!isSemver("", true) && !isSemver(" 1.0.0", true) && !isSemver("1. 0.0", true)'
        ' && !isSemver("1.0.0 ", true) && isSemver("v1.0.0", true)'
        ' && isSemver("01.01.01", true) && isSemver("1", true) && isSemver("1.1", true)',
        matches=True,
    ),
    "isSemver of a list": Case(
        "isSemver([1, 2, 3])", compile_error="found no matching overload for 'isSemver'"
    ),
    "semver normalized equality": Case('semver("v01.01", true) == semver("1.1.0")', matches=True),
    "semver comparisons": Case(
        'semver("1.2.3") != semver("1.0.0")'
        ' && semver("1.0.0").isLessThan(semver("1.2.3"))'
        ' && !semver("1.0.0").isLessThan(semver("1.0.0"))'
        ' && semver("1.2.3").isGreaterThan(semver("1.0.0"))'
        ' && !semver("1.0.0").isGreaterThan(semver("1.0.0"))'
        ' && semver("1.2.3").compareTo(semver("1.2.3")) == 0'
        ' && semver("1.0.0").compareTo(semver("1.2.3")) == -1'
        ' && semver("1.2.3").compareTo(semver("1.0.0")) == 1',
        matches=True,
    ),
    "semver parts": Case(
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2'
        ' && semver("1.2.3").patch() == 3',
        matches=True,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_expression_gives_what_kubernetes_tests_expect(case: Case) -> None:
    device = {"name": "dev-0", "attributes": case.attributes, "capacity": case.capacity}
    if case.compile_error is not None:
        with pytest.raises(CelCompileError, match=case.compile_error):
            compile_selector(case.expression)
        return
    selector = compile_selector(case.expression)
    facts = device_facts(case.driver, device)
    if case.match_error is not None:
        with pytest.raises(CelRuntimeError, match=case.match_error):
            selector.matches(facts)
        return
    assert selector.matches(facts) is case.matches
