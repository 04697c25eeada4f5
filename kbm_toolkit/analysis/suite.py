"""Suites as set cover over the kill matrix (the paper's §6): per problem, the few inputs that
detect the most witnessed mutants, the budget curve, and a held-out check of the selection.

All of it is a query over the store; only valid inputs (the correct kernel passes them at the
tolerance) can be chosen, so a suite never rejects an honest kernel it was measured on.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from kbm_toolkit.analysis.matrix import Matrix, killed, load_matrices, valid_at
from kbm_toolkit.analysis.score import run_protocol
from kbm_toolkit.outputs import output_file, output_folder
from kbm_toolkit.problems.hidden_writer import HiddenSuite, KbvAdmission, SuiteNote, write_hidden_tests
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.protocols.protocol import Protocol, protocol_toml

Admit = Callable[[Problem, InputSpec], bool]
"""Whether an input may be chosen for a problem (e.g. whether KernelBench-Verified's format can say
it: `problems.hidden_writer.KbvAdmission`); without one, every valid input may be."""


def kill_sets(mx: Matrix, tolerance: float, admit: Admit | None = None) -> dict[str, set[str]]:
    """input id → the mutants it kills at `tolerance`, over the inputs valid at that tolerance and
    run on every mutant (a column with gaps, e.g. new inputs run only on one protocol's survivors,
    would look weaker than it is; a mutant stopped by a crash leaves no gap), and that `admit`
    admits when it is given."""
    valid = {i for i, c in mx.checks.items() if valid_at(c, tolerance) and not mx.missing(i, mx.stopped)}
    kills: dict[str, set[str]] = {i: set() for i in valid}
    for (m, i), cell in mx.cells.items():
        if i in valid and m in mx.mutants and killed(cell, tolerance):
            kills[i].add(m)
    return _admitted(mx, kills, admit)


def _admitted(mx: Matrix, kills: dict[str, set[str]], admit: Admit | None) -> dict[str, set[str]]:
    if admit is None:
        return kills
    specs = {i: InputSpec.from_record(json.loads(mx.checks[i]["spec"]), mx.checks[i].get("label") or i) for i in kills}
    return {i: k for i, k in kills.items() if admit(mx.problem, specs[i])}


def greedy_cover(kills: dict[str, set[str]], universe: set[str], budget: int,
                 prior: dict[str, float] | None = None) -> list[str]:
    """Up to `budget` inputs, each the one adding the most still-uncovered mutants of `universe`.
    Ties go to the input with the larger `prior` weight, then to the smaller id (deterministic).
    Without a prior the suite stops once nothing more is added; with one, the rest of the budget
    goes to the inputs of the largest weight (a suite chosen knowing few faults still spends its
    budget on inputs that kill much elsewhere)."""
    prior = prior or {}
    chosen: list[str] = []
    covered: set[str] = set()
    for _ in range(budget):
        gain = {i: len((kills[i] & universe) - covered) for i in kills if i not in chosen}
        best = min(gain, key=lambda i: (-gain[i], -prior.get(i, 0.0), i), default=None)
        if best is None or not (gain[best] or prior):
            break
        chosen.append(best)
        covered |= kills[best] & universe
    return chosen


def cover_sizes(matrices: list[Matrix], tolerance: float) -> dict[str, int]:
    """Per problem, how many inputs greedy set cover takes to kill every mutant some stored input
    kills at `tolerance` (the paper's Fig. 6b), over the inputs run on every mutant."""
    sizes = {}
    for mx in matrices:
        kills = kill_sets(mx, tolerance)
        universe = set().union(*kills.values()) if kills else set()
        if universe:
            sizes[mx.problem.key] = len(greedy_cover(kills, universe, len(kills)))
    return sizes


def input_kind(spec: str) -> str:
    """What an input is, apart from its draw and its problem: two official trials are one kind,
    and so are two problems' tiny-shape probes."""
    record = json.loads(spec)
    record.pop("seed", None)
    record.pop("problem", None)
    record["shape"] = bool(record.get("shape"))
    if "hidden" in record:  # a KBV hidden config is one kind across problems: its file's hash is the problem's
        record["hidden"] = {"config": record["hidden"].get("config")}
    return json.dumps(record, sort_keys=True)


def kind_prior(kills: dict[str, dict[str, set[str]]], universe: dict[str, set[str]],
               kinds: dict[str, dict[str, str]]) -> dict[str, float]:
    """Per input kind, the share of a problem's `universe` that one input of that kind kills,
    pooled over every problem: what the pool as a whole says an input is worth."""
    killed: dict[str, int] = defaultdict(int)
    seen: dict[str, int] = defaultdict(int)
    for key, columns in kills.items():
        for i, mutants in columns.items():
            killed[kinds[key][i]] += len(mutants & universe[key])
            seen[kinds[key][i]] += len(universe[key])
    return {k: killed[k] / seen[k] if seen[k] else 0.0 for k in killed}


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

    def denominator_words(self, tolerance: float, baseline: str) -> str:
        """What the curve's figures are over, and why `baseline`'s figure here is not its audit's."""
        problems = len(self.suites[self.budgets[0]]) if self.budgets else 0
        return (f"{self.witnessed:,} mutants over {problems} problems, witnessed at {tolerance:g} by any valid input "
                "the store holds, among the mutants run on every input (set cover needs full rows); "
                f"{baseline}'s figure here is over them, not over its audit's denominator (kbm audit -a {baseline}: "
                "the denominator protocols' inputs, every evaluated mutant, only the problems it can referee)")

    def summary(self) -> dict[str, Any]:
        """The curve as plain data (`kbm suite --json`): per budget, full-pool and held-out detection."""
        return {"witnessed": self.witnessed, "problems": len(self.suites[self.budgets[0]]) if self.budgets else 0,
                "baseline_full_pct": self.baseline_full, "baseline_held_out_pct": self.baseline_held_out,
                "budgets": [{"budget": b, "full_pct": f, "held_out_pct": h,
                             **({"held_out_splits_pct": self.held_out_splits[i]} if self.held_out_splits else {})}
                            for i, (b, f, h) in enumerate(zip(self.budgets, self.full, self.held_out))],
                "suites": {str(b): s for b, s in self.suites.items()}}


def budget_curve(matrices: list[Matrix], tolerance: float, budgets: list[int],
                 baseline: dict[str, set[str]] | None = None, splits: int = 0,
                 admit: Admit | None = None) -> SuiteCurve:
    """Greedy suites at each budget: scored on the full pool (selected on it), and held out
    (selected on each problem's dev half of witnessed mutants, scored on the test half). Ties and
    budget a problem's own mutants leave unused go to the input kinds that kill most over every
    problem's selection half (`kind_prior`): with a few mutants per problem, a problem's own
    choice is noisy and the pool's is not. With
    `splits`, held-out detection is also measured on that many other splits: on a small pool
    one split's figure moves by a point or so with the draw. With `admit`, suites are chosen only
    among the inputs it admits, and scored over the same witnessed mutants as without it."""
    every = {mx.problem.key: kill_sets(mx, tolerance) for mx in matrices}
    kills = {mx.problem.key: _admitted(mx, every[mx.problem.key], admit) for mx in matrices}
    kinds = {mx.problem.key: {i: input_kind(mx.checks[i]["spec"]) for i in kills[mx.problem.key]} for mx in matrices}
    witnessed = {k: set().union(*v.values()) if v else set() for k, v in every.items()}
    n = sum(len(w) for w in witnessed.values())

    def cover(universe: dict[str, set[str]], b: int) -> dict[str, list[str]]:
        prior = kind_prior(kills, universe, kinds)  # learnt from `universe` alone, e.g. the dev halves
        return {k: greedy_cover(kills[k], universe[k], b, {i: prior[kinds[k][i]] for i in kills[k]})
                for k in witnessed}

    def held_out(b: int, salt: str = "") -> float:
        test = {k: {m for m in w if half(m, salt) == "test"} for k, w in witnessed.items()}
        chosen = cover({k: w - test[k] for k, w in witnessed.items()}, b)
        return _pct(sum(len(set().union(*(kills[k][i] for i in c)) & test[k]) if c else 0
                        for k, c in chosen.items()), sum(len(t) for t in test.values()))

    full, suites = [], {}
    for b in budgets:
        chosen = cover(witnessed, b)
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


def suite_curve(store: Any, budget: int, tolerance: float, baseline: Protocol, splits: int = 20,
                admit: Admit | None = None) -> SuiteCurve:
    """`kbm suite`: the budget curve for B = 1..max(5, budget) over the store's full rows, against
    `baseline`, held out on `splits` more splits. Only inputs run on every mutant (and that `admit`
    admits) can be chosen."""
    matrices = load_matrices(store, full_rows=True)  # set cover needs full rows (not --first-kill's)
    base = run_protocol(baseline, matrices, tolerance)
    return budget_curve(matrices, tolerance, list(range(1, max(5, budget) + 1)), base.detected, splits, admit)


def write_suite(curve: SuiteCurve, store: Any, folder: Path, budget: int, tolerance: float) -> Path:
    """The suite chosen at `budget` as an adapter folder (`folder/protocol.toml`); its path."""
    with output_file(output_folder(folder) / "protocol.toml") as path:
        path.write_text(emit_protocol(curve.suites[budget], store, f"suite-{budget}", tolerance))
    return path


def write_kbv_suite(curve: SuiteCurve, store: Any, folder: Path, budget: int, tolerance: float,
                    admission: KbvAdmission, store_name: str | None = None) -> HiddenSuite:
    """The suite chosen at `budget` (among the inputs `admission` admits) as KernelBench-Verified
    hidden test files, `folder/hidden_tests/`, beside the same suite's `folder/protocol.toml`; the
    note names the store `store_name` (as it was given, e.g. `@demo`) or else its path."""
    protocol = write_suite(curve, store, folder, budget, tolerance)
    figure = curve.full[curve.budgets.index(budget)]
    note = SuiteNote(store_name or store.where, budget, tolerance,
                     detection=f"{figure:.1f}% at B = {budget} of {curve.witnessed:,} mutants witnessed at "
                               f"{tolerance:g} by any valid input the store holds (full pool)")
    return replace(write_hidden_tests(folder, suite_specs(curve.suites[budget], store), admission, note),
                   protocol=protocol)


def suite_specs(suite: dict[str, list[str]], store: Any) -> dict[str, list[InputSpec]]:
    """The chosen suite's input specs, by problem, labelled as the store labels them."""
    specs = {}
    for problem, inputs in suite.items():
        rows = [store.input_row(i) for i in inputs]
        specs[problem] = [InputSpec.from_record(json.loads(r["spec"]), r["label"] or r["id"]) for r in rows]
    return specs


def emit_protocol(suite: dict[str, list[str]], store: Any, name: str, tolerance: float) -> str:
    """The chosen suite as a protocol.toml that `kbm audit --adapter DIR` accepts."""
    specs = suite_specs(suite, store)
    largest = max((len(v) for v in suite.values()), default=0)
    return protocol_toml(name, f"set-cover suite, up to {largest} inputs per problem", tolerance, specs,
                         comment="A suite chosen by `kbm suite` (greedy set cover over the kill matrix).")
