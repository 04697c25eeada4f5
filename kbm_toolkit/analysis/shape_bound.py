"""Shape-bound mutants: those that run the original's machine code at every shape a set of inputs
builds, read from the verdicts `kbm equivalence` stores (`mutation.shape_equivalence`).

No values at those shapes, and no tolerance, can witness such a mutant: a protocol that misses it
can catch it only with another shape. A mutant no input witnesses and that is shape-bound at every
valid input is equivalent as far as this store's inputs go: a proof over their shapes, not a guess
from equal margins.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from kbm_toolkit.analysis.matrix import Matrix
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.vocabulary import FAMILIES, OTHER_CODE, SAME_CODE


def shape_keys(mx: Matrix, inputs: Iterable[str]) -> set[str]:
    """The shapes (`InputSpec.shape_key`) the problem's stored `inputs` build."""
    return {mx.shape_of(i) for i in inputs}


def official_shape(mx: Matrix) -> str:
    """The shapes the problem's official inputs build (no overrides)."""
    return InputSpec.make(mx.problem.key, 0).shape_key


def every_shape(mx: Matrix) -> set[str]:
    """The official shapes and those of every input the store found valid for the problem: what
    `kbm equivalence` judges a mutant at."""
    return shape_keys(mx, (i for i, c in mx.checks.items() if c["valid"])) | {official_shape(mx)}


def bound(verdicts: dict[str, int | None], shapes: set[str]) -> bool | None:
    """True: the original's code at every one of `shapes`; False: other code at one of them; None:
    not judged at every one (or undecided at one), so not known."""
    if any(verdicts.get(s) == OTHER_CODE for s in shapes):
        return False
    return True if shapes and all(verdicts.get(s) == SAME_CODE for s in shapes) else None


def shape_bound(mutants: dict[str, set[str]], matrices: list[Matrix],
                inputs: dict[str, Iterable[str]]) -> dict[str, Any] | None:
    """Of `mutants` (per problem), those shape-bound at the shapes of the problem's `inputs`, by
    family, and how many lack the verdicts that would say: {"mutants", "bound", "unjudged",
    "families": {family: [mutants, bound]}, "examples": [(problem, mutant, rule)]}; None where no
    problem has verdicts (`kbm equivalence` never ran on the store)."""
    if not any(mx.verdicts for mx in matrices):
        return None
    by_key = {mx.problem.key: mx for mx in matrices}
    families: dict[str, Counter] = {}
    examples: list[tuple[str, str, str]] = []
    total = found = unjudged = 0
    for key, ms in sorted(mutants.items()):
        if not ms:
            continue
        mx = by_key[key]
        shapes = shape_keys(mx, inputs.get(key, ()))
        for m in sorted(ms):
            row = mx.mutants[m]
            verdict = bound(mx.verdicts.get(m, {}), shapes)
            counts = families.setdefault(row["family"], Counter())
            counts["mutants"] += 1
            total += 1
            if verdict is None:
                unjudged += 1
            elif verdict:
                counts["bound"] += 1
                found += 1
                if len(examples) < 5:
                    examples.append((key, m, row["rule"]))
    return {"mutants": total, "bound": found, "unjudged": unjudged,
            "families": {f: [families[f]["mutants"], families[f]["bound"]] for f in FAMILIES if f in families},
            "examples": examples}


def equivalence_table(matrices: list[Matrix]) -> list[tuple[str, Counter]]:
    """Per family (and `all`), the distinct mutants of `matrices`: `judged` (a verdict at the official
    shapes), `official` (shape-bound there), `every` (shape-bound at every valid input's shapes) and
    `undecided` (a shape the judging could not decide)."""
    rows: dict[str, Counter] = {}
    for mx in matrices:
        official = official_shape(mx)
        every = every_shape(mx)
        for m, row in mx.mutants.items():
            mine = mx.verdicts.get(m, {})
            counts = rows.setdefault(row["family"], Counter())
            counts["distinct"] += 1
            counts["judged"] += official in mine
            counts["official"] += bound(mine, {official}) is True
            counts["every"] += bound(mine, every) is True
            counts["undecided"] += any(v is None for v in mine.values())
    table = [(f, rows[f]) for f in FAMILIES if f in rows]
    return table + [("all", sum((c for _, c in table), Counter()))] if table else []
