"""What no input witnesses: the distinct mutants no valid input of any protocol kills at that
protocol's own tolerance, by family, told apart by what their cells show.

A survivor whose margin equals the correct kernel's on every input it ran produced (as far as
the comparison can tell) the correct kernel's output: an equivalence candidate. One whose margin
differs somewhere changed the output by less than every tolerance: an oracle-blindness
candidate, the closest to being caught first. Neither is proven; both are where to look.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from kbm_toolkit.analysis.matrix import Matrix
from kbm_toolkit.analysis.score import run_protocol, witness_judging, witnessed
from kbm_toolkit.analysis.shape_bound import bound, every_shape
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import FAMILIES, Accounting

SAME, CHANGED, NOT_RUN = "the correct kernel's margin", "changed, within tolerance", "not run"
"""What an unwitnessed mutant's cells on the protocols' valid inputs show."""


@dataclass
class FamilyRemainder:
    """One family's distinct mutants and those no input witnesses, by what their cells show."""

    distinct: int = 0
    kinds: Counter = field(default_factory=Counter)
    rules: Counter = field(default_factory=Counter)
    """Per rule, its distinct mutants no input witnesses."""
    rule_totals: Counter = field(default_factory=Counter)
    """Per rule, its distinct mutants."""
    bound: int | None = None
    """Of those no input witnesses, how many run the original's code at every valid input's shapes
    (`kbm equivalence`): equivalent as far as these inputs go, proven; None: no verdicts stored."""
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def kind_of(cells: list[tuple[str, str, float | None, float]]) -> tuple[str, float | None]:
    """What a survivor's cells (input, outcome, margin, the correct kernel's margin) show, and
    its largest margin."""
    if not cells:
        return NOT_RUN, None
    margins = [m for _, _, m, _ in cells if m is not None]
    worst = max(margins) if margins else None
    same = all(outcome == "pass" and margin is not None and math.isclose(margin, correct, rel_tol=1e-9)
               for _, outcome, margin, correct in cells)
    return (SAME if same else CHANGED), worst


def remainder(store: Any, matrices: list[Matrix], protocols: list[Protocol],
              excluded: Iterable[str] = ()) -> dict[str, tuple[str, dict[str, Any], str, float | None]]:
    """Mutant id -> (problem, row, what its cells show, largest margin) for each distinct mutant of
    `matrices` (problems in `excluded` aside) that no valid input of `protocols` kills at its own
    tolerance, judged on those protocols' inputs."""
    left_out = set(excluded)
    kept = [mx for mx in matrices if mx.problem.key not in left_out]
    results = [run_protocol(p, kept, judging=witness_judging(p, p, Accounting.UNION)) for p in protocols]
    wit = witnessed(results)
    inputs = {mx.problem.key: set().union(*(r.kills.get(mx.problem.key, {}).keys() for r in results))
              for mx in kept}
    rows = {m: (mx.problem.key, row) for mx in kept for m, row in mx.mutants.items()
            if m not in wit.get(mx.problem.key, set())}
    cells = store.margins_beside_correct(rows)
    return {m: (key, row, *kind_of([c for c in cells.get(m, []) if c[0] in inputs[key]]))
            for m, (key, row) in sorted(rows.items())}


def unwitnessed(store: Any, matrices: list[Matrix], protocols: list[Protocol],
                excluded: Iterable[str] = (), examples: int = 3) -> dict[str, FamilyRemainder]:
    """Per family (in `FAMILIES` order), the distinct mutants of `matrices` (problems in `excluded`
    aside) and those no valid input of `protocols` kills at its own tolerance, by what their cells
    on those inputs show, with up to `examples` of each kind (the changed ones by largest margin)."""
    left_out = set(excluded)
    found: dict[str, FamilyRemainder] = {}
    for mx in matrices:
        if mx.problem.key in left_out:
            continue
        for row in mx.mutants.values():
            family = found.setdefault(row["family"], FamilyRemainder())
            family.distinct += 1
            family.rule_totals[row["rule"]] += 1
    shown: dict[tuple[str, str], list[dict[str, Any]]] = {}
    left = remainder(store, matrices, protocols, left_out)
    by_key = {mx.problem.key: mx for mx in matrices}
    judged = any(mx.verdicts for mx in matrices)
    shapes: dict[str, set[str]] = {}
    for m, (key, row, kind, worst) in left.items():
        if judged:
            r, mx = found[row["family"]], by_key[key]
            if key not in shapes:
                shapes[key] = every_shape(mx)
            r.bound = (r.bound or 0) + (bound(mx.verdicts.get(m, {}), shapes[key]) is True)
        found[row["family"]].kinds[kind] += 1
        found[row["family"]].rules[row["rule"]] += 1
        shown.setdefault((row["family"], kind), []).append(
            {"id": m, "problem": key, "rule": row["rule"], "name": row["name"], "margin": worst})
    for (family, kind), rows_of in shown.items():
        if kind == CHANGED:
            rows_of.sort(key=lambda r: -(r["margin"] or 0.0))
        found[family].examples[kind] = rows_of[:examples]
    order = {f: i for i, f in enumerate(FAMILIES)}
    return dict(sorted(found.items(), key=lambda kv: order.get(kv[0], len(order))))
