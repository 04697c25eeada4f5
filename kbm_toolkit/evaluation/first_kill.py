"""`kbm run --first-kill`: stop running a protocol's inputs on a mutant once the protocol detects it.

A detection cannot be undone by more cells, so every audit of the run's protocols comes out the
same with fewer of them (on the KernelBench sample, 37% of the full matrix). What is lost is the
full row: suites (set cover) and scores at tolerances outside the rule's need every cell, and
read only the share of mutants evaluated without this (`Store.widen_sample`).

A detection is judged at every tolerance an audit may read the run's cells at: its protocols'
(re-scoring one protocol's inputs at another's, the gain decomposition of `kbm audit --vs`) and
the witnesses' (`kbm run` adds every installed protocol's: an audit at 1e-2 counts a mutant as
witnessed only by a kill at 1e-2, which a protocol judged at 1e-3 may not have made yet). A
mutant still gets an input while, at some tolerance the correct kernel passes that input at, a
protocol the input belongs to does not detect it yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from kbm_toolkit.analysis.matrix import killed


@dataclass(frozen=True)
class FirstKill:
    """One problem's stopping rule: which protocols each input belongs to, and the tolerances judged."""

    groups: dict[str, frozenset[str]]
    """Input id -> the protocols whose inputs include it."""
    tolerances: tuple[float, ...]
    """Every tolerance a detection is judged at, loosest first."""

    @classmethod
    def of(cls, protocols: Iterable[Any], problem: Any, witnesses: Iterable[float] = ()) -> "FirstKill":
        """The rule for `problem` under `protocols` (each with `name`, `tolerance` and `specs`), also
        exact for audits that count the cells as witnesses at the tolerances `witnesses`."""
        protocols = list(protocols)
        groups: dict[str, set[str]] = {}
        for p in protocols:
            for spec in p.specs(problem):
                groups.setdefault(spec.id, set()).add(p.name)
        tolerances = {p.tolerance for p in protocols} | set(witnesses)
        return cls({i: frozenset(g) for i, g in groups.items()}, tuple(sorted(tolerances, reverse=True)))

    def record(self) -> dict[str, Any]:
        """A plain record for a worker task."""
        return {"groups": {i: sorted(g) for i, g in self.groups.items()}, "tolerances": list(self.tolerances)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "FirstKill":
        return cls({i: frozenset(g) for i, g in record["groups"].items()}, tuple(record["tolerances"]))

    def settles(self, input_id: str, outcome: str | None, margin: float | None,
                correct_margin: float | None) -> dict[float, frozenset[str]]:
        """Tolerance -> the protocols that detect a mutant through this cell there."""
        group = self.groups.get(input_id)
        if not group or correct_margin is None:
            return {}
        return {t: group for t in self.tolerances if correct_margin <= t and killed((outcome, margin), t)}

    def needed(self, input_id: str, settled: dict[float, set[str]], correct_margin: float | None) -> bool:
        """Whether a mutant whose `settled` protocols already detect it (by tolerance) still needs this
        input's cell; `correct_margin` None: the input is not checked yet, so any tolerance may."""
        group = self.groups.get(input_id)
        if not group:
            return True
        return any(not group <= settled.get(t, set()) for t in self.tolerances
                   if correct_margin is None or correct_margin <= t)


@dataclass
class Settled:
    """Which protocols already detect each mutant, as checks and cells arrive (the worker and the
    parent each keep one, so that neither asks for a cell the other skips)."""

    rule: FirstKill
    margins: dict[str, float] = field(default_factory=dict)
    """Valid input id -> the correct kernel's margin on it."""
    by_mutant: dict[str, dict[float, set[str]]] = field(default_factory=dict)
    """Mutant id -> tolerance -> the protocols detecting it there."""

    def check(self, input_id: str, margin: float) -> None:
        self.margins[input_id] = margin

    def cell(self, mutant: str, input_id: str, outcome: str | None, margin: float | None) -> None:
        found = self.rule.settles(input_id, outcome, margin, self.margins.get(input_id))
        for t, group in found.items():
            self.by_mutant.setdefault(mutant, {}).setdefault(t, set()).update(group)

    def needed(self, mutant: str, input_id: str) -> bool:
        """Whether the mutant still needs its cell on this input."""
        return self.rule.needed(input_id, self.by_mutant.get(mutant, {}), self.margins.get(input_id))
