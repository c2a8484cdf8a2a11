"""PodDisruptionBudgets by namespace: which budgets cover a pod (preemption weighs them)."""

from __future__ import annotations

from collections.abc import Iterable

from koordgang.model.budgets import BudgetInfo
from koordgang.model.pod import PodInfo
from koordgang.state.store import StoreChange

__all__ = ["DisruptionBudgets"]


class DisruptionBudgets:
    def __init__(self) -> None:
        #: namespace -> key -> budget.
        self._budgets: dict[str, dict[str, BudgetInfo]] = {}

    def upsert(self, budget: BudgetInfo) -> StoreChange:
        self._budgets.setdefault(budget.namespace, {})[budget.key] = budget
        return StoreChange(changed=True)

    def remove(self, key: str) -> StoreChange:
        namespace = key.partition("/")[0]
        budgets = self._budgets.get(namespace)
        if budgets is None or budgets.pop(key, None) is None:
            return StoreChange()
        if not budgets:
            del self._budgets[namespace]
        return StoreChange(changed=True)

    def replace(self, items: Iterable[BudgetInfo]) -> StoreChange:
        self._budgets = {}
        for budget in items:
            self.upsert(budget)
        return StoreChange(changed=True)

    def __len__(self) -> int:
        return sum(len(budgets) for budgets in self._budgets.values())

    def covering(self, pod: PodInfo) -> list[BudgetInfo]:
        """The budgets whose selector covers ``pod``."""
        budgets = self._budgets.get(pod.namespace)
        if not budgets:
            return []
        return [b for b in budgets.values() if b.covers(pod.namespace, pod.labels)]
