"""Suites as set cover over the kill matrix (the paper's §6): per problem, the few inputs that
detect the most witnessed mutants, the budget curve, and a held-out check of the selection.

All of it is a query over the store; only valid inputs (the correct kernel passes them at the
tolerance) can be chosen, so a suite never rejects an honest kernel it was measured on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.score import Matrix, _killed, valid_at


def kill_sets(mx: Matrix, tolerance: float) -> dict[str, set[str]]:
    """input id → the mutants it kills at `tolerance`, over the inputs valid at that tolerance and
    run on every mutant (a column with gaps, e.g. new inputs run only on one protocol's survivors,
    would look weaker than it is; a mutant stopped by a crash leaves no gap)."""
    def complete(i: str) -> bool:
        gaps = len(mx.mutants) - mx.evaluated.get(i, 0)
        return gaps <= 0 or gaps <= sum(1 for m in mx.stopped if (m, i) not in mx.cells)

    valid = {i for i, c in mx.checks.items() if valid_at(c, tolerance) and complete(i)}
    kills: dict[str, set[str]] = {i: set() for i in valid}
    for (m, i), cell in mx.cells.items():
        if i in valid and m in mx.mutants and _killed(cell, tolerance):
            kills[i].add(m)
    return kills


def greedy_cover(kills: dict[str, set[str]], universe: set[str], budget: int,
                 fallback: list[str] | None = None) -> list[str]:
    """Up to `budget` inputs, each the one adding the most still-uncovered mutants of `universe`
    (ties to the smaller input id, so the choice is deterministic). When nothing more is added,
    the rest of the budget goes to `fallback` inputs in order (a suite chosen knowing few faults
    still runs the benchmark's own inputs), else the suite stops short."""
    chosen: list[str] = []
    covered: set[str] = set()
    for _ in range(budget):
        best = max(sorted(kills), key=lambda i: len((kills[i] & universe) - covered), default=None)
        if best is None or not (kills[best] & universe) - covered:
            break
        chosen.append(best)
        covered |= kills[best] & universe
    spare = [i for i in fallback or [] if i in kills and i not in chosen]
    return chosen + spare[:budget - len(chosen)]


def default_inputs(mx: Matrix) -> list[str]:
    """A problem's inputs as a suite with no kill information would take them: official trials first."""
    return sorted(mx.checks, key=lambda i: (not (mx.checks[i].get("label") or "").startswith("official"),
                                            mx.checks[i].get("label") or "", i))


def half(mutant_id: str, salt: str = "") -> str:
    """`dev` or `test`: a stable 50/50 split of mutants by id hash (another `salt`, another split)."""
    return "dev" if hashlib.sha256((salt + mutant_id).encode()).digest()[0] % 2 == 0 else "test"


@dataclass
class SuiteCurve:
    """Detection (%) per budget, on the full pool and held out, against a baseline protocol."""

    budgets: list[int]
    full: list[float]
    held_out: list[float]
    baseline_full: float
    baseline_held_out: float
    witnessed: int
    suites: dict[int, dict[str, list[str]]]
    held_out_splits: list[list[float]] = field(default_factory=list)
    """Per budget, held-out detection on each of the extra salted splits (none unless asked)."""


def budget_curve(matrices: list[Matrix], tolerance: float, budgets: list[int],
                 baseline: dict[str, set[str]] | None = None, splits: int = 0) -> SuiteCurve:
    """Greedy suites at each budget: scored on the full pool (selected on it), and held out
    (selected on each problem's dev half of witnessed mutants, scored on the test half; a dev
    half that leaves budget unused, or is empty, falls back to the official inputs). With
    `splits`, held-out detection is also measured on that many other splits: on a small pool
    one split's figure moves by a point or so with the draw."""
    kills = {mx.problem.key: kill_sets(mx, tolerance) for mx in matrices}
    fallback = {mx.problem.key: default_inputs(mx) for mx in matrices}
    witnessed = {k: set().union(*v.values()) if v else set() for k, v in kills.items()}
    n = sum(len(w) for w in witnessed.values())

    def held_out(b: int, salt: str = "") -> float:
        test = {k: {m for m in w if half(m, salt) == "test"} for k, w in witnessed.items()}
        chosen = {k: greedy_cover(kills[k], w - test[k], b, fallback[k]) for k, w in witnessed.items()}
        return _pct(sum(len(set().union(*(kills[k][i] for i in c)) & test[k]) if c else 0
                        for k, c in chosen.items()), sum(len(t) for t in test.values()))

    full, suites = [], {}
    for b in budgets:
        chosen = {k: greedy_cover(kills[k], w, b) for k, w in witnessed.items()}
        suites[b] = chosen
        full.append(_pct(sum(len(set().union(*(kills[k][i] for i in c)) & witnessed[k]) if c else 0
                             for k, c in chosen.items()), n))
    base = baseline or {}
    test = {k: {m for m in w if half(m) == "test"} for k, w in witnessed.items()}
    return SuiteCurve(budgets, full, [held_out(b) for b in budgets],
                      _pct(sum(len(base.get(k, set()) & w) for k, w in witnessed.items()), n),
                      _pct(sum(len(base.get(k, set()) & t) for k, t in test.items()), sum(map(len, test.values()))),
                      n, suites,
                      [[held_out(b, f"split {s}:") for s in range(1, splits + 1)] for b in budgets] if splits else [])


def _pct(x: int, n: int) -> float:
    return 100.0 * x / n if n else float("nan")


def emit_protocol(suite: dict[str, list[str]], store: Any, name: str, tolerance: float) -> str:
    """The chosen suite as a protocol.toml that `kbm audit --adapter DIR` accepts."""
    import json

    from kbm_toolkit.inputs import InputSpec
    from kbm_toolkit.protocols import protocol_toml

    specs = {}
    for problem, inputs in suite.items():
        rows = [store.db["inputs"].get(i) for i in inputs]
        specs[problem] = [InputSpec.from_record(json.loads(r["spec"]), r["label"] or r["id"]) for r in rows]
    largest = max((len(v) for v in suite.values()), default=0)
    return protocol_toml(name, f"set-cover suite, up to {largest} inputs per problem", tolerance, specs,
                         comment="A suite chosen by `kbm suite` (greedy set cover over the kill matrix).")
