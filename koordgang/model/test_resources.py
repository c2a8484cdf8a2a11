import copy
import pickle
from typing import Any

import pytest

from koordgang.model.quantity import QuantityError
from koordgang.model.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resources,
    parse_amounts,
    parse_resource_list,
)

GPU = "nvidia.com/gpu"


def test_resource_name_constants_are_the_kubernetes_names() -> None:
    assert (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) == ("cpu", "memory", "ephemeral-storage", "pods")


def test_zero_entries_are_dropped_so_equal_vectors_compare_and_hash_equal() -> None:
    with_zero = Resources({CPU: 100, MEMORY: 0})
    without = Resources({CPU: 100})
    assert with_zero == without
    assert hash(with_zero) == hash(without)
    assert with_zero.names() == (CPU,)
    assert MEMORY not in with_zero


def test_get_reads_a_missing_resource_as_zero() -> None:
    resources = Resources({CPU: 100})
    assert resources.get(CPU) == 100
    assert resources.get(GPU) == 0
    assert resources.get(GPU, -1) == -1


def test_indexing_a_missing_resource_raises_key_error_like_a_mapping() -> None:
    with pytest.raises(KeyError):
        Resources({CPU: 1})[MEMORY]


def test_items_and_names_are_sorted_by_name() -> None:
    resources = Resources({MEMORY: 5, GPU: 1, CPU: 100})
    assert resources.items() == ((CPU, 100), (MEMORY, 5), (GPU, 1))
    assert resources.names() == (CPU, MEMORY, GPU)
    assert list(resources) == [CPU, MEMORY, GPU]
    assert len(resources) == 3


def test_vectors_can_be_built_from_pairs() -> None:
    assert Resources([(CPU, 1), (MEMORY, 2)]) == Resources({CPU: 1, MEMORY: 2})


@pytest.mark.parametrize(
    ("left", "right", "total"),
    [
        ({CPU: 100}, {CPU: 250}, {CPU: 350}),
        ({CPU: 100}, {MEMORY: 1024}, {CPU: 100, MEMORY: 1024}),
        ({CPU: 100, GPU: 1}, {CPU: -100}, {GPU: 1}),
        ({}, {GPU: 2}, {GPU: 2}),
        ({GPU: 2}, {}, {GPU: 2}),
    ],
)
def test_adding_sums_per_resource(
    left: dict[str, int], right: dict[str, int], total: dict[str, int]
) -> None:
    assert Resources(left) + Resources(right) == Resources(total)


@pytest.mark.parametrize(
    ("left", "right", "difference"),
    [
        ({CPU: 1000, MEMORY: 2048}, {CPU: 250}, {CPU: 750, MEMORY: 2048}),
        ({CPU: 100}, {CPU: 100}, {}),
        ({CPU: 100}, {CPU: 300}, {CPU: -200}),
        ({}, {GPU: 1}, {GPU: -1}),
    ],
)
def test_subtracting_may_go_negative_and_drops_zeros(
    left: dict[str, int], right: dict[str, int], difference: dict[str, int]
) -> None:
    result = Resources(left) - Resources(right)
    assert result == Resources(difference)
    assert result.as_dict() == difference


def test_adding_or_subtracting_empty_returns_the_same_vector() -> None:
    resources = Resources({CPU: 1})
    assert resources + Resources.EMPTY is resources
    assert resources - Resources.EMPTY is resources
    assert Resources.EMPTY + resources is resources


def test_a_difference_to_nothing_is_the_shared_empty_vector() -> None:
    resources = Resources({CPU: 1, MEMORY: 2})
    assert (resources - resources) is Resources.EMPTY


@pytest.mark.parametrize(
    ("amounts", "zero"),
    [({}, True), ({CPU: 0}, True), ({CPU: 1}, False), ({MEMORY: -1}, False)],
)
def test_a_vector_is_false_only_without_any_nonzero_amount(
    amounts: dict[str, int], zero: bool
) -> None:
    assert bool(Resources(amounts)) is not zero


def test_multiplying_scales_every_amount() -> None:
    per_member = Resources({CPU: 500, GPU: 1})
    assert per_member * 8 == Resources({CPU: 4000, GPU: 8})
    assert 2 * per_member == Resources({CPU: 1000, GPU: 2})
    assert per_member * 0 is Resources.EMPTY


def test_negating_flips_every_sign() -> None:
    assert -Resources({CPU: 5, MEMORY: -3}) == Resources({CPU: -5, MEMORY: 3})


@pytest.mark.parametrize(
    ("left", "right", "peak"),
    [
        ({CPU: 100, MEMORY: 10}, {CPU: 300, MEMORY: 5}, {CPU: 300, MEMORY: 10}),
        ({CPU: 100}, {GPU: 1}, {CPU: 100, GPU: 1}),
        ({CPU: -5}, {}, {}),
        ({CPU: -5}, {CPU: -7}, {CPU: -5}),
        ({}, {CPU: -7}, {}),
    ],
)
def test_max_takes_the_larger_amount_per_resource_counting_missing_as_zero(
    left: dict[str, int], right: dict[str, int], peak: dict[str, int]
) -> None:
    assert Resources(left).max(Resources(right)) == Resources(peak)


@pytest.mark.parametrize(
    ("wanted", "free", "insufficient"),
    [
        ({CPU: 500}, {CPU: 1000}, ()),
        ({CPU: 1000}, {CPU: 1000}, ()),
        ({CPU: 1001}, {CPU: 1000}, (CPU,)),
        ({GPU: 1}, {CPU: 1000}, (GPU,)),
        ({CPU: 1, MEMORY: 10, GPU: 2}, {CPU: 0, MEMORY: 5, GPU: 2}, (CPU, MEMORY)),
        ({}, {CPU: -5}, ()),
        ({MEMORY: 1}, {CPU: -5, MEMORY: 1}, ()),
        ({CPU: 1}, {CPU: -5}, (CPU,)),
    ],
)
def test_exceeds_names_the_requested_resources_the_capacity_lacks(
    wanted: dict[str, int], free: dict[str, int], insufficient: tuple[str, ...]
) -> None:
    assert Resources(wanted).exceeds(Resources(free)) == insufficient


def test_vectors_are_immutable() -> None:
    resources = Resources({CPU: 1})
    with pytest.raises(AttributeError, match="immutable"):
        resources._amounts = {}
    with pytest.raises(AttributeError, match="immutable"):
        del resources._items
    assert resources.get(CPU) == 1


def test_as_dict_is_a_copy_that_cannot_change_the_vector() -> None:
    resources = Resources({CPU: 1})
    copied = resources.as_dict()
    copied[CPU] = 99
    assert resources.get(CPU) == 1


def test_vectors_survive_copy_and_pickle() -> None:
    resources = Resources({CPU: 100, GPU: 2})
    assert copy.deepcopy(resources) == resources
    assert pickle.loads(pickle.dumps(resources)) == resources


def test_vectors_work_as_dict_keys() -> None:
    cache = {Resources({CPU: 1, MEMORY: 2}): "hit"}
    assert cache[Resources({MEMORY: 2, CPU: 1})] == "hit"


def test_vectors_are_not_equal_to_plain_dicts() -> None:
    assert Resources({CPU: 1}) != {CPU: 1}


def test_repr_shows_the_amounts() -> None:
    assert repr(Resources({CPU: 1})) == "Resources({'cpu': 1})"


@pytest.mark.parametrize(
    "amounts",
    [{CPU: 1.5}, {CPU: "1"}, {CPU: True}, {1: 1}],
)
def test_non_integer_amounts_and_names_are_refused(amounts: dict[Any, Any]) -> None:
    with pytest.raises(TypeError):
        Resources(amounts)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, {}),
        ({}, {}),
        ({"cpu": "100m"}, {CPU: 100}),
        ({"cpu": "1.5"}, {CPU: 1500}),
        ({"cpu": "0.1"}, {CPU: 100}),
        ({"cpu": "1u"}, {CPU: 1}),
        ({"cpu": 2}, {CPU: 2000}),
        ({"memory": "1Gi"}, {MEMORY: 1073741824}),
        ({"memory": "128974848"}, {MEMORY: 128974848}),
        ({"memory": "129e6"}, {MEMORY: 129000000}),
        ({"memory": "123Mi"}, {MEMORY: 128974848}),
        ({"memory": "1.5"}, {MEMORY: 2}),
        ({"ephemeral-storage": "10Gi"}, {EPHEMERAL_STORAGE: 10737418240}),
        ({"pods": "110"}, {PODS: 110}),
        ({"nvidia.com/gpu": "8"}, {GPU: 8}),
        ({"hugepages-2Mi": "1Gi"}, {"hugepages-2Mi": 1073741824}),
        ({"cpu": "0", "memory": "1"}, {MEMORY: 1}),
    ],
)
def test_resource_lists_parse_cpu_to_millicores_and_the_rest_to_units(
    raw: dict[str, Any] | None, expected: dict[str, int]
) -> None:
    assert parse_resource_list(raw) == Resources(expected)


def test_parse_amounts_keeps_explicit_zeros() -> None:
    assert parse_amounts({"cpu": "0", "memory": "1Ki"}) == {CPU: 0, MEMORY: 1024}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cpu": "abc"}, '[cpu]: invalid quantity "abc"'),
        ({"nvidia.com/gpu": "1 "}, '[nvidia.com/gpu]: invalid quantity "1 "'),
        ({"memory": None}, "[memory]: invalid quantity null"),
        ({"memory": "-1Gi"}, '[memory]: invalid quantity "-1Gi": must not be negative'),
        (["cpu"], 'expected a map of resource name to quantity, got ["cpu"]'),
    ],
)
def test_bad_resource_lists_raise_quantity_error_naming_resource_and_value(
    raw: Any, message: str
) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_resource_list(raw)
    assert str(caught.value).startswith(message)
