"""What a run has measured so far, saved after every measurement: the ceilings and the
scenario results, in the order they were taken. ``--resume`` reads it back and runs the rest."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import report
from bench.results import CeilingResult, ScenarioResult, set_share_of_ceiling

RESULTS_JSON = "results.json"


@dataclass
class Progress:
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    ceilings: list[CeilingResult] = field(default_factory=list)
    results: list[ScenarioResult] = field(default_factory=list)

    @classmethod
    def load(cls, folder: Path) -> Progress:
        document = json.loads((folder / RESULTS_JSON).read_text())
        ceilings = [CeilingResult(**c) for c in document.get("ceilings", [])]
        results = [ScenarioResult(**r) for r in document.get("scenarios", [])]
        # A run that failed to run (not one that ran and found problems) is tried again.
        results = [r for r in results if not any(p.startswith("run failed") for p in r.problems)]
        return cls(folder / RESULTS_JSON, dict(document.get("meta", {})), ceilings, results)

    def has(self, scenario: str, scheduler: str) -> bool:
        return any(r.name == scenario and r.scheduler == scheduler for r in self.results)

    def has_ceiling(self, label: str) -> bool:
        return any(c.label == label for c in self.ceilings)

    def add(self, result: ScenarioResult) -> None:
        self.results.append(result)
        self.save()

    def add_ceiling(self, ceiling: CeilingResult) -> None:
        self.ceilings.append(ceiling)
        self.save()

    def update_meta(self, meta: Mapping[str, Any]) -> None:
        self.meta.update(meta)
        self.save()

    def save(self) -> None:
        self.set_shares()
        report.write_json(self.path, self.meta, self.ceilings, self.results)

    def set_shares(self) -> None:
        """Each result's share of the ceiling: of the best of the ceiling measured just before
        its scheduler and the next one measured (the machine's other load only lowers it)."""
        order = [c.label for c in self.ceilings]
        for result in self.results:
            before = result.notes.get("ceiling_before")
            if before not in order:
                continue
            index = order.index(before)
            rates = [c.binds_per_s for c in self.ceilings[index : index + 2] if c.binds_per_s > 0]
            set_share_of_ceiling(result, max(rates) if rates else None)
