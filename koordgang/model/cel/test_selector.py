"""What a selector sees of a device, how it fails, and how it is compiled and cached."""

from typing import Any

import pytest

from koordgang.model.cel import (
    CelCompileError,
    CelError,
    CelRuntimeError,
    DeviceFacts,
    Selector,
    compile_selector,
    device_facts,
)

GPU: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "gpu.example.com/index": {"int": 0},
        "driverVersion": {"version": "1.2.3"},
        "ok": {"bool": True},
        "other.example.com/zone": {"string": "z1"},
    },
    "capacity": {"memory": {"value": "80Gi"}, "other.example.com/slots": {"value": "4"}},
    "allowMultipleAllocations": False,
}


def gpu(**changes: Any) -> DeviceFacts:
    return device_facts("gpu.example.com", {**GPU, **changes})


def matches(expression: str, facts: DeviceFacts | None = None) -> bool:
    return compile_selector(expression).matches(facts or gpu())


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # the brief's example, and the fields of the device
        (
            'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model'
            ' == "a100" && device.capacity["gpu.example.com"].memory'
            '.compareTo(quantity("40Gi")) >= 0',
            True,
        ),
        ('device.driver == "gpu.example.com"', True),
        ("device.allowMultipleAllocations", False),
        # a name without a domain goes to the driver's domain; domain/id to its domain
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].index == 0', True),
        ('device.attributes["other.example.com"].zone == "z1"', True),
        ('device.capacity["other.example.com"].slots == quantity("4")', True),
        ('"zone" in device.attributes["gpu.example.com"]', False),
        # attribute value types
        ('device.attributes["gpu.example.com"].ok', True),
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3+other")', True),
        ('device.capacity["gpu.example.com"].memory == quantity("81920Mi")', True),
        ('device.capacity["gpu.example.com"].memory.asInteger() == 85899345920', True),
        # a domain the device lacks is an empty map
        ('"x" in device.attributes["nvidia.com"]', False),
        ('has(device.attributes["nvidia.com"].x)', False),
        ('size(device.attributes["nvidia.com"]) == 0', True),
        ('device.capacity["nvidia.com"].all(k, false)', True),
        ('device.attributes["nvidia.com"].exists(k, true) || device.driver != ""', True),
        ('"nvidia.com" in device.attributes', False),
        ('"gpu.example.com" in device.capacity', True),
        # a missing id in an existing domain is false for has() and in
        ('has(device.attributes["gpu.example.com"].nope)', False),
        ('"nope" in device.attributes["gpu.example.com"]', False),
        # cel.bind, as Kubernetes suggests it for one domain
        ('cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.ok)', True),
        ('cel.bind(o, device.attributes["nvidia.com"], !has(o.model))', True),
        # the optional syntax on an attribute
        ('device.attributes["gpu.example.com"].?model.orValue("none") == "a100"', True),
        ('device.attributes["nvidia.com"].?model.orValue("none") == "none"', True),
        # CEL's own logic absorbs an error when the other side decides
        ('device.attributes["gpu.example.com"].nope == 1 || true', True),
        ('device.attributes["gpu.example.com"].nope == 1 && false', False),
        ('device.attributes.exists_one(d, d == "other.example.com")', True),
    ],
)
def test_selector_sees_the_device_as_kubernetes_shows_it(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('device.attributes["nvidia.com"].model == "a100"', "no such key: model"),
        ('device.attributes["nvidia.com"]["model"] == "a100"', "no such key: model"),
        ('device.attributes["gpu.example.com"].nope == 1', "no such key: nope"),
        ('device.capacity["gpu.example.com"].cores.isLessThan(quantity("1"))', "key: cores"),
        ('device.attributes["gpu.example.com"].model.isGreaterThan(semver("1.0.0"))', "overload"),
        ('device.attributes["gpu.example.com"].model + 1 == 2', "no such overload"),
        ("device.nope", "no such key: nope"),
    ],
)
def test_a_missing_key_or_a_type_error_is_a_runtime_error_naming_it(
    expression: str, message: str
) -> None:
    with pytest.raises(CelRuntimeError) as raised:
        matches(expression)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("expression", "kind"),
    [
        ("device.driver", "string"),
        ('device.attributes["gpu.example.com"].index', "int"),
        ('device.capacity["gpu.example.com"].memory', "map"),
        ("device.attributes", "map"),
        ('dyn(device.attributes["gpu.example.com"].?model)', "an optional"),
    ],
)
def test_a_result_that_is_not_a_bool_is_a_runtime_error(expression: str, kind: str) -> None:
    with pytest.raises(CelRuntimeError, match=f"must evaluate to a bool, not {kind}"):
        matches(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("?!", "Syntax error"),
        ("device.driver ==", "Syntax error"),
        ("1", "must evaluate to bool or the unknown type, not int"),
        ('"x"', "must evaluate to bool or the unknown type, not string"),
        ('quantity("1")', "must evaluate to bool or the unknown type, not quantity or semver"),
        ("nosuchfunction(1)", "undeclared reference to 'nosuchfunction'"),
        ("devices.driver == 1", "undeclared reference to 'devices.driver'"),
        ('"x".isGreaterThan(semver("1.0.0"))', "found no matching overload for 'isGreaterThan'"),
        ('"x" + 1 == "x1"', "found no matching overload for '_+_'"),
        ('device.attributes[?"nvidia.com"].hasValue()', "optional lookup of a whole domain"),
        ("device.capacity.?foo.hasValue()", "optional lookup of a whole domain"),
        ("x" * 10241, "more than 10240"),
        (
            "[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))",
            "comprehensions nested 4 deep",
        ),
    ],
)
def test_an_expression_that_does_not_compile_is_a_compile_error(
    expression: str, message: str
) -> None:
    with pytest.raises(CelCompileError) as raised:
        compile_selector(expression)
    assert message in str(raised.value)


def test_comprehensions_nested_three_deep_still_compile() -> None:
    assert matches("[1].all(a, [1].all(b, [1].all(c, a == b && b == c)))") is True
    # Comprehensions side by side are not nested.
    assert matches("[1].all(a, a > 0) && [1].all(b, b > 0) && [1].all(c, [1].all(d, true))")


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            {"driverVersion": {"version": "1.x"}},
            'attribute "gpu.example.com/driverVersion": "1.x" is not a semantic version',
        ),
        ({"n": {}}, 'attribute "gpu.example.com/n": unsupported attribute value'),
        ({"n": {"string": None}}, 'attribute "gpu.example.com/n": unsupported attribute value'),
        (
            {"other.com/list": {"ints": [1, 2]}},
            'attribute "other.com/list": list-typed attribute values are not supported',
        ),
        ({"n": {"int": "5"}}, 'attribute "gpu.example.com/n": "5" is not an integer'),
        ({"n": {"int": 2**63}}, "does not fit in int64"),
        ({"n": {"bool": "yes"}}, '"yes" is not a bool'),
        ({"n": {"string": 5}}, "5 is not a string"),
        ({"n": "a100"}, 'attribute "gpu.example.com/n": expected an object'),
    ],
)
def test_a_bad_attribute_value_fails_every_evaluation_naming_the_attribute(
    attributes: dict[str, Any], message: str
) -> None:
    facts = device_facts("gpu.example.com", {"name": "gpu-0", "attributes": attributes})
    assert facts.problem is not None
    # Even an expression that does not touch the attribute fails, as in Kubernetes.
    with pytest.raises(CelRuntimeError) as raised:
        matches("true", facts)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ({"capacity": {"memory": {"value": "lots"}}}, 'capacity "gpu.example.com/memory"'),
        ({"capacity": {"memory": {}}}, "expected an object with a value"),
        ({"attributes": ["model"]}, "attributes: expected an object"),
        ({"allowMultipleAllocations": "yes"}, "allowMultipleAllocations: expected a bool"),
    ],
)
def test_device_facts_never_raises_and_remembers_the_problem(
    device: dict[str, Any], message: str
) -> None:
    facts = device_facts("gpu.example.com", device)
    assert facts.problem is not None and message in facts.problem


def test_a_scalar_value_wins_over_a_list_value_as_kubernetes_reads_them() -> None:
    facts = device_facts("d.com", {"attributes": {"n": {"int": 3, "ints": [1]}}})
    assert matches('device.attributes["d.com"].n == 3', facts)


def test_a_device_without_attributes_or_capacity_has_empty_maps() -> None:
    facts = device_facts("d.com", {"name": "bare"})
    assert matches("size(device.attributes) == 0 && size(device.capacity) == 0", facts)
    assert matches("!device.allowMultipleAllocations", facts)
    assert matches('device.driver == "d.com"', facts)


def test_allow_multiple_allocations_is_read_when_set() -> None:
    assert matches("device.allowMultipleAllocations", gpu(allowMultipleAllocations=True))


def test_integral_capacity_values_from_json_are_quantities_too() -> None:
    facts = device_facts("d.com", {"capacity": {"slots": {"value": 4}}})
    assert matches('device.capacity["d.com"].slots.asInteger() == 4', facts)


def test_one_facts_object_serves_many_selectors() -> None:
    facts = gpu()
    selectors = [
        compile_selector('device.attributes["gpu.example.com"].model == "a100"'),
        compile_selector('device.attributes["gpu.example.com"].model == "h100"'),
        compile_selector('has(device.attributes["nvidia.com"].model)'),
    ]
    assert [selector.matches(facts) for selector in selectors] == [True, False, False]
    # The retry for the missing domain left the facts as they were.
    assert facts.domains == {"gpu.example.com", "other.example.com"}
    assert matches("size(device.attributes) == 2", facts)


def test_compiling_the_same_expression_twice_returns_the_same_selector() -> None:
    expression = 'device.driver == "cache.example.com"'
    first = compile_selector(expression)
    assert isinstance(first, Selector)
    assert compile_selector(expression) is first
    assert first.expression == expression


def test_a_failing_expression_fails_the_same_way_from_the_cache() -> None:
    with pytest.raises(CelCompileError) as first:
        compile_selector("device.driver == ")
    with pytest.raises(CelCompileError) as second:
        compile_selector("device.driver == ")
    assert str(first.value) == str(second.value)


@pytest.mark.parametrize(
    "expression",
    [
        "?!\n&&",
        "device.driver ==\n",
        'device.attributes["nvidia.com"]\n.model',
        "x" * 20000,
    ],
)
def test_every_error_message_is_one_line_without_python_reprs(expression: str) -> None:
    with pytest.raises(CelError) as raised:
        matches(expression)
    text = str(raised.value)
    assert "\n" not in text and len(text) <= 300
    assert "Traceback" not in text and "<" not in text.split(":")[0]


def test_compile_and_runtime_errors_are_both_cel_errors() -> None:
    assert issubclass(CelCompileError, CelError) and issubclass(CelRuntimeError, CelError)
