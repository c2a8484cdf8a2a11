"""Each library function a selector can call, through compile_selector and matches."""

import pytest

from koordgang.model.cel import (
    CelCompileError,
    CelRuntimeError,
    compile_selector,
    device_facts,
)
from koordgang.model.cel.cost import budget
from koordgang.model.cel.lists import cel_equal
from koordgang.model.cel.regex import uncaptured

NO_DEVICE = device_facts("dra.example.com", {"name": "dev-0"})


def evaluate(expression: str) -> bool:
    return compile_selector(expression).matches(NO_DEVICE)


TRUE_EXPRESSIONS = [
    # quantity, isQuantity
    'quantity("12Mi") == quantity("12582912")',
    'isQuantity("20") && isQuantity("20M") && isQuantity("20Mi")',
    '!isQuantity("20Mo") && !isQuantity("10Mm") && !isQuantity("")',
    'quantity("0.1n") == quantity("1n")',
    # comparisons
    'quantity("50Mi").isGreaterThan(quantity("50M"))',
    '!quantity("50M").isGreaterThan(quantity("50M"))',
    'quantity("50M").isLessThan(quantity("50Mi"))',
    'quantity("200M").compareTo(quantity("0.2G")) == 0',
    'quantity("50M").compareTo(quantity("50Mi")) == -1',
    'quantity("50Mi").compareTo(quantity("50M")) == 1',
    # arithmetic
    'quantity("50k").add(quantity("20")) == quantity("50.02k")',
    'quantity("50k").add(20) == quantity("50020")',
    'quantity("50k").sub(quantity("20")) == quantity("49.98k")',
    'quantity("50k").sub(20) == quantity("49980")',
    'quantity("0.1").add(quantity("0.2")) == quantity("0.3")',
    # conversions
    'quantity("50k").asInteger() == 50000',
    'quantity("1000m").asInteger() == 1',
    'quantity("50").isInteger() && !quantity("1500m").isInteger()',
    '!quantity("9999999999999999999999999999999999999G").isInteger()',
    'quantity("50.703k").asApproximateFloat() == 50703.0',
    'quantity("1.5").asApproximateFloat() == 1.5',
    # sign, as Kubernetes declares it and as its documentation writes it
    'sign(quantity("-1")) == -1 && sign(quantity("0")) == 0 && sign(quantity("2m")) == 1',
    'quantity("-3").sign() == -1',
    # semver, isSemver
    'semver("1.2.3") == semver("1.2.3+build.7")',
    'semver("1.2.3") != semver("1.0.0")',
    'isSemver("1.2.3-beta.1+build.1") && !isSemver("v1.0.0") && !isSemver("1.1")',
    'isSemver("v1.0.0", true) && isSemver("1", true) && !isSemver(" 1.0.0", true)',
    'semver("v01.01", true) == semver("1.1.0")',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    'semver("1.2.3").isGreaterThan(semver("1.0.0"))',
    'semver("1.0.0").isLessThan(semver("1.2.3"))',
    'semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
    'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
    'semver("1.0.0").compareTo(semver("1.2.3")) == -1',
    # Kubernetes' list functions
    "[1, 2, 3].isSorted() && !([3, 1].isSorted()) && [].isSorted()",
    '["a", "b", "b"].isSorted() && [1.0, 2.5].isSorted()',
    "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [].sum() == 0",
    "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
    '["b", "a"].min() == "a" && [false, true].max() == true',
    "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2",
    "[1, 2].indexOf(3) == -1 && [1, 2].lastIndexOf(3) == -1",
    '[[1], [2]].indexOf([2]) == 1 && [{"a": 1}].indexOf({"a": 1}) == 0',
    # regular expressions: matches (standard), find, findAll
    '"asymetric".matches("[^a]?sym")',
    '"abc123def456".find("[0-9]+") == "123"',
    '"abc".find("[0-9]+") == ""',
    '"abab".find("(a)(b)") == "ab"',
    '"a1b22c333".findAll("[0-9]+") == ["1", "22", "333"]',
    '"a1b22c333".findAll("[0-9]+", 2) == ["1", "22"]',
    '"a1b22c333".findAll("[0-9]+", 0) == []',
    '"baaa".findAll("a*") == ["", "aaa"]',
    '"héllo".findAll("\\\\w+") == ["h", "llo"]',
    '"a\\nb".findAll("^.") == ["a"] && "a\\nb".findAll("(?m)^.") == ["a", "b"]',
    # sets
    "sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])",
    "sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [2])",
    "sets.equivalent([1, 2, 2], [2, 1]) && !sets.equivalent([1], [1, 2])",
    # strings (version 2)
    '"AbC".lowerAscii() == "abc" && "AbC".upperAscii() == "ABC"',
    '"a,b".split(",") == ["a", "b"] && ["a", "b"].join("-") == "a-b"',
    '" x ".trim() == "x" && "aXa".replace("a", "b") == "bXb"',
    '"abcb".indexOf("b") == 1 && "abcb".lastIndexOf("b") == 3',
    '"abc".substring(1) == "bc" && "abc".substring(0, 2) == "ab" && "abc".charAt(1) == "b"',
    'strings.quote("a") == "\\"a\\""',
    '"%d items".format([3]) == "3 items"',
    # lists (version 2)
    "[3, 1, 2].sort() == [1, 2, 3] && [1, 1, 2].distinct() == [1, 2]",
    "lists.range(3) == [0, 1, 2] && [[1], [2]].flatten() == [1, 2]",
    "[1, 2, 3].slice(1, 3) == [2, 3] && [1, 2].reverse() == [2, 1]",
    # macros, bind, optional, two-variable comprehensions
    "cel.bind(x, 2, x * x == 4)",
    "[1, 2].exists(v, v == 2) && [1, 2].all(v, v > 0) && [1, 2].exists_one(v, v == 1)",
    "[1, 2].map(v, v * 2) == [2, 4] && [1, 2].filter(v, v > 1) == [2]",
    '{"a": 1}.?b.orValue(7) == 7 && {"a": 1}.?a.orValue(7) == 1',
    "[1, 2].all(i, v, i < v) && [1, 2].exists(i, v, i == 1 && v == 2)",
    "[1, 2].transformList(i, v, v * 10) == [10, 20]",
]


@pytest.mark.parametrize("expression", TRUE_EXPRESSIONS)
def test_library_function_gives_kubernetes_result(expression: str) -> None:
    assert evaluate(expression) is True


RUNTIME_ERRORS = [
    ('quantity("10Mo") == quantity("1")', 'invalid quantity "10Mo"'),
    (
        'quantity("9999999999999999999999999999999999999G").asInteger() == 0',
        "cannot convert value to integer",
    ),
    ('semver("v1.0") == semver("1.0.0")', "No Major.Minor.Patch elements found"),
    ('semver("1.2.3").isGreaterThan(quantity("1"))', "needs two quantities or two versions"),
    ('dyn("x").isGreaterThan(semver("1.0.0"))', "no such overload"),
    ("[].min() == 1", "min called on empty list"),
    ("[].max() == 1", "max called on empty list"),
    ("[9223372036854775807, 1].sum() == 0", "integer overflow"),
    ('[1, "a"].isSorted()', "values of different types have no order"),
    ('[duration("1s")].min() == duration("1s")', "durations or times"),
    ('"x".find("(") == ""', "Illegal regex: invalid regular expression: missing ): ("),
    ('"x".findAll("[", 1) == []', "Illegal regex"),
    ('"x".matches("[")', "invalid regular expression"),
    ("1 / 0 == 1", "divide by zero"),
    ('{"a": 1}["b"] == 1', "no such key: b"),
    ('"abc".charAt(4) == ""', "charAt"),
]


@pytest.mark.parametrize(("expression", "message"), RUNTIME_ERRORS)
def test_library_function_failure_is_a_runtime_error_naming_the_problem(
    expression: str, message: str
) -> None:
    with pytest.raises(CelRuntimeError) as raised:
        evaluate(expression)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("expression", "name"),
    [
        ('ip("10.0.0.1").family() == 4', "ip"),
        ('isIP("10.0.0.1")', "isIP"),
        ('cidr("10.0.0.0/8").containsIP("10.0.0.1")', "cidr"),
        ('isURL("https://example.com")', "isURL"),
        ('url("https://example.com").getHost() == "example.com"', "url"),
        ('!format.dns1123Label().validate("x").hasValue()', "format.dns1123Label"),
        ('format.named("uuid").hasValue()', "format.named"),
        ('{"a": 1}.transformMap(k, v, v + 1) == {"a": 2}', "transformMap"),
        ('[1].transformMapEntry(i, v, {"k": v}) == {"k": 1}', "transformMapEntry"),
    ],
)
def test_kubernetes_function_koordgang_lacks_is_refused_at_compile_time_by_name(
    expression: str, name: str
) -> None:
    with pytest.raises(CelCompileError, match=f"koordgang cannot evaluate CEL function '{name}'"):
        compile_selector(expression)


def test_a_name_inside_a_string_literal_is_not_taken_for_a_call() -> None:
    assert evaluate('"ip(1)" != "url(x)"') is True


def test_comparing_an_int_literal_with_a_double_literal_is_refused_with_a_hint() -> None:
    with pytest.raises(CelCompileError, match="cannot compare int with double"):
        compile_selector("1 < 2.5")


def test_cross_type_numeric_comparison_between_attribute_values_works() -> None:
    facts = device_facts("d.com", {"attributes": {"n": {"int": 1}}})
    assert compile_selector('device.attributes["d.com"].n < 2.5').matches(facts) is True


def test_an_evaluation_past_the_call_budget_fails_as_over_the_cost_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(budget, "limit", 10)
    selector = compile_selector('lists.range(20).all(i, quantity("1").isInteger())')
    with pytest.raises(CelRuntimeError, match="actual cost limit exceeded"):
        selector.matches(NO_DEVICE)
    # An evaluation within the budget still succeeds: the count starts again each time.
    assert compile_selector('lists.range(3).all(i, quantity("1").isInteger())').matches(NO_DEVICE)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("a(b)c", "a(?:b)c"),
        ("(?P<x>a)(?<y>b)", "(?:a)(?:b)"),
        ("(?i)a(?:b)", "(?i)a(?:b)"),
        (r"\(a\)", r"\(a\)"),
        ("[(]a[^)]", "[(]a[^)]"),
        ("[]()]", "[]()]"),
        ("[[:alpha:]()](x)", "[[:alpha:]()](?:x)"),
        (r"\Q(a)\E(b)", r"\Q(a)\E(?:b)"),
    ],
)
def test_capturing_groups_become_non_capturing_and_nothing_else_changes(
    pattern: str, expected: str
) -> None:
    assert uncaptured(pattern) == expected


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ("a", "a", True),
        ("1", 1, False),
        ([1, [2]], [1.0, [2]], True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"b": 1}, False),
        (bytearray(b"a"), bytearray(b"a"), True),
        (None, None, True),
        (float("nan"), float("nan"), False),
    ],
)
def test_list_search_uses_cel_equality(left: object, right: object, equal: bool) -> None:
    assert cel_equal(left, right) is equal
