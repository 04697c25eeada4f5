"""`kbm run --first-kill`: stop running a protocol's inputs on a mutant once the protocol detects it.

A detection cannot be undone by more cells, so every audit of the run's protocols comes out the
same with fewer of them (on the KernelBench sample, 37% of the full matrix). What is lost is the
full row: suites (set cover) and scores at tolerances outside the run's need every cell, and
read only the share of mutants evaluated without this (`Store.widen_sample`).

The rule is run-wide, not per protocol, so that re-scoring one protocol's inputs at another's
tolerance (the gain decomposition of `kbm audit --vs`) stays exact: a cell settles its input's
protocols when it kills at the loosest tolerance of the run's protocols and the correct kernel
passes that input at the strictest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass(frozen=True)
class FirstKill:
    """One problem's stopping rule: which protocols each input belongs to, and the two thresholds."""

    groups: dict[str, frozenset[str]]
    """Input id -> the protocols whose inputs include it."""
    kill: float
    """A cell kills under every protocol of the run when its margin exceeds this (the loosest tolerance)."""
    valid: float
    """An input is valid under every protocol of the run when the correct kernel's margin is at most this."""

    @classmethod
    def of(cls, protocols: Iterable[Any], problem: Any) -> "FirstKill":
        """The rule for `problem` under `protocols` (each with `name`, `tolerance` and `specs`)."""
        protocols = list(protocols)
        groups: dict[str, set[str]] = {}
        for p in protocols:
            for spec in p.specs(problem):
                groups.setdefault(spec.id, set()).add(p.name)
        return cls({i: frozenset(g) for i, g in groups.items()},
                   max(p.tolerance for p in protocols), min(p.tolerance for p in protocols))

    def record(self) -> dict[str, Any]:
        """A plain record for a worker task."""
        return {"groups": {i: sorted(g) for i, g in self.groups.items()}, "kill": self.kill, "valid": self.valid}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "FirstKill":
        return cls({i: frozenset(g) for i, g in record["groups"].items()}, record["kill"], record["valid"])

    def settles(self, input_id: str, outcome: str | None, margin: float | None,
                correct_margin: float | None) -> frozenset[str]:
        """The protocols that detect a mutant through this cell, whatever tolerance of the run judges it."""
        if correct_margin is None or correct_margin > self.valid:
            return frozenset()
        if outcome == "pass" and margin is not None and margin <= self.kill:
            return frozenset()
        return self.groups.get(input_id, frozenset())

    def needed(self, input_id: str, settled: set[str] | frozenset[str]) -> bool:
        """Whether a mutant whose `settled` protocols already detect it still needs this input's cell."""
        group = self.groups.get(input_id)
        return not group or not group <= settled


@dataclass
class Settled:
    """Which protocols already detect each mutant, as checks and cells arrive (the worker and the
    parent each keep one, so that neither asks for a cell the other skips)."""

    rule: FirstKill
    margins: dict[str, float | None] = field(default_factory=dict)
    """Input id -> the correct kernel's margin on it (None: not valid)."""
    by_mutant: dict[str, set[str]] = field(default_factory=dict)

    def check(self, input_id: str, margin: float | None) -> None:
        self.margins[input_id] = margin

    def cell(self, mutant: str, input_id: str, outcome: str | None, margin: float | None) -> None:
        found = self.rule.settles(input_id, outcome, margin, self.margins.get(input_id))
        if found:
            self.by_mutant.setdefault(mutant, set()).update(found)

    def needed(self, mutant: str, input_id: str) -> bool:
        """Whether the mutant still needs its cell on this input."""
        return self.rule.needed(input_id, self.by_mutant.get(mutant, frozenset()))
