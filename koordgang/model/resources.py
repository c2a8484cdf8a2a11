"""Resource vectors: integer amounts per resource name, in the units the scheduler compares.

CPU is kept in millicores and everything else in whole units (bytes, devices, pods), rounded up
the way Kubernetes rounds, so that every fit check is integer arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, ClassVar, NoReturn

from koordgang.model.errors import show
from koordgang.model.quantity import QuantityError, to_int, to_milli

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "Resources",
    "format_amount",
    "parse_amounts",
    "parse_resource_list",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


class Resources:
    """An immutable, hashable mapping of resource name to a non-zero integer amount.

    Missing names read as 0, so zero entries are dropped to keep equality and hashing
    canonical. Amounts may be negative (a difference such as free = allocatable - used of an
    overcommitted node).
    """

    __slots__ = ("_amounts", "_hash", "_items")

    EMPTY: ClassVar[Resources]

    _amounts: dict[str, int]
    _items: tuple[tuple[str, int], ...]
    _hash: int

    def __init__(
        self, amounts: Mapping[str, int] | Iterable[tuple[str, int]] | None = None
    ) -> None:
        pairs = amounts.items() if isinstance(amounts, Mapping) else (amounts or ())
        clean: dict[str, int] = {}
        for name, amount in pairs:
            if not isinstance(name, str):
                raise TypeError(f"resource names must be str, got {name!r}")
            if type(amount) is not int:
                raise TypeError(f"amount of {name!r} must be int, got {amount!r}")
            if amount:
                clean[name] = amount
            else:
                clean.pop(name, None)
        self._init(clean)

    @classmethod
    def _wrap(cls, clean: dict[str, int]) -> Resources:
        """A vector around ``clean`` (int amounts, no zeros), which the caller gives up."""
        if not clean:
            return cls.EMPTY
        obj = object.__new__(cls)
        obj._init(clean)
        return obj

    def _init(self, clean: dict[str, int]) -> None:
        # Sorted once here, because items() is what the scheduler's hot loops iterate.
        items = tuple(sorted(clean.items()))
        setattr_ = object.__setattr__
        setattr_(self, "_amounts", dict(items))
        setattr_(self, "_items", items)
        setattr_(self, "_hash", hash(items))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Resources is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Resources is immutable (cannot delete {name!r})")

    def __reduce__(self) -> tuple[type[Resources], tuple[dict[str, int]]]:
        return (Resources, (dict(self._amounts),))

    def get(self, name: str, default: int = 0) -> int:
        return self._amounts.get(name, default)

    def __getitem__(self, name: str) -> int:
        return self._amounts[name]

    def __contains__(self, name: object) -> bool:
        return name in self._amounts

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def items(self) -> tuple[tuple[str, int], ...]:
        """(name, amount) pairs sorted by name."""
        return self._items

    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self._items)

    def as_dict(self) -> dict[str, int]:
        return dict(self._amounts)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Resources):
            return NotImplemented
        return self._hash == other._hash and self._items == other._items

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Resources({self._amounts!r})"

    def __add__(self, other: Resources) -> Resources:
        if not isinstance(other, Resources):
            return NotImplemented
        if not other._items:
            return self
        if not self._items:
            return other
        total = dict(self._amounts)
        for name, amount in other._items:
            value = total.get(name, 0) + amount
            if value:
                total[name] = value
            else:
                del total[name]
        return Resources._wrap(total)

    def __sub__(self, other: Resources) -> Resources:
        if not isinstance(other, Resources):
            return NotImplemented
        if not other._items:
            return self
        total = dict(self._amounts)
        for name, amount in other._items:
            value = total.get(name, 0) - amount
            if value:
                total[name] = value
            else:
                del total[name]
        return Resources._wrap(total)

    def __neg__(self) -> Resources:
        return Resources._wrap({name: -amount for name, amount in self._items})

    def __mul__(self, factor: int) -> Resources:
        if type(factor) is not int:
            return NotImplemented
        if factor == 0:
            return Resources.EMPTY
        return Resources._wrap({name: amount * factor for name, amount in self._items})

    __rmul__ = __mul__

    def max(self, other: Resources) -> Resources:
        """Per resource, the larger of the two amounts (a missing one counts as 0)."""
        merged = dict(self._amounts)
        for name, amount in other._items:
            if amount > merged.get(name, 0):
                merged[name] = amount
        for name, amount in self._items:
            if amount < 0 and name not in other._amounts:
                del merged[name]
        return Resources._wrap(merged)

    def exceeds(self, capacity: Resources) -> tuple[str, ...]:
        """Names (sorted) whose amount here is greater than in ``capacity``.

        Only names present here are considered, as kube-scheduler ignores resources a pod does
        not request even when the node is overcommitted on them.
        """
        available = capacity._amounts
        over: tuple[str, ...] = ()
        for name, amount in self._items:
            if amount > available.get(name, 0):
                over += (name,)
        return over


Resources.EMPTY = Resources()


@lru_cache(maxsize=8192)
def _amount(is_cpu: bool, text: str) -> int:
    return to_milli(text) if is_cpu else to_int(text)


def parse_amounts(raw: Mapping[str, Any] | None) -> dict[str, int]:
    """Like :func:`parse_resource_list`, but a plain dict that keeps explicit zero entries."""
    if raw is None:
        return {}
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise QuantityError(f"expected a map of resource name to quantity, got {show(raw)}")
    amounts: dict[str, int] = {}
    for name, value in raw.items():
        if not isinstance(name, str):
            raise QuantityError(f"resource name must be a string, got {show(name)}")
        try:
            if isinstance(value, str):
                amount = _amount(name == CPU, value)
            else:
                amount = to_milli(value) if name == CPU else to_int(value)
        except QuantityError as err:
            raise err.at(f"[{name}]") from None
        if amount < 0:
            raise QuantityError(
                f"invalid quantity {show(value)}: must not be negative", f"[{name}]"
            )
        amounts[name] = amount
    return amounts


def parse_resource_list(raw: Mapping[str, Any] | None) -> Resources:
    """A ``ResourceList`` (``{"cpu": "500m", "memory": "1Gi"}``) as a :class:`Resources`.

    CPU becomes millicores; every other resource (memory, ``hugepages-2Mi``,
    ``nvidia.com/gpu``, ...) whole units, rounded up. Raises :class:`QuantityError`, located at
    ``[<resource name>]``, for a bad or negative quantity.
    """
    if not raw:
        return Resources.EMPTY
    return Resources._wrap({n: a for n, a in parse_amounts(raw).items() if a})


_BINARY_SUFFIXES = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)
_BYTE_RESOURCES = (MEMORY, EPHEMERAL_STORAGE)


def format_amount(name: str, amount: int) -> str:
    """An amount as a person writes it: ``1500m`` or ``4`` CPUs, ``12Gi`` of memory, ``8`` GPUs."""
    if name == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if name in _BYTE_RESOURCES or name.startswith("hugepages-"):
        for suffix, size in _BINARY_SUFFIXES:
            if amount and amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)
