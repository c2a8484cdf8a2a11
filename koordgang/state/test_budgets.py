"""The budgets store: which budgets cover a pod, and how many it holds."""

from __future__ import annotations

from koordgang.model.budgets import BudgetInfo
from koordgang.model.labels import parse_label_selector
from koordgang.model.pod import PodInfo, parse_pod
from koordgang.state.budgets import DisruptionBudgets


def budget(namespace: str, name: str, app: str) -> BudgetInfo:
    selector = parse_label_selector({"matchLabels": {"app": app}})
    return BudgetInfo(namespace, name, selector, disruptions_allowed=0)


def pod(namespace: str, app: str) -> PodInfo:
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": namespace, "uid": "u", "labels": {"app": app}},
            "spec": {"containers": [{"name": "c"}]},
        }
    )


def test_counts_budgets_of_every_namespace_and_forgets_removed_ones() -> None:
    budgets = DisruptionBudgets()
    budgets.upsert(budget("a", "one", "web"))
    budgets.upsert(budget("a", "one", "web"))
    budgets.upsert(budget("b", "two", "db"))
    assert len(budgets) == 2
    budgets.remove("a/one")
    assert len(budgets) == 1
    budgets.replace([])
    assert len(budgets) == 0


def test_covers_pods_of_its_own_namespace_only() -> None:
    budgets = DisruptionBudgets()
    budgets.upsert(budget("a", "one", "web"))
    assert [b.name for b in budgets.covering(pod("a", "web"))] == ["one"]
    assert budgets.covering(pod("b", "web")) == []
    assert budgets.covering(pod("a", "db")) == []
