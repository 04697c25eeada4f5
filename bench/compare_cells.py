"""Compare the kill matrices of two stores cell by cell (e.g. an interrupted-and-resumed run
against an uninterrupted one, or two evaluators' runs on one slice: `bench/eval_throughput.py`).

    python bench/compare_cells.py A.db B.db [--problems KEY,KEY] [--rel 1e-6]

Prints the cell counts, the cells only in one store, and the cells whose outcome or margin
differ, grouped by rule, with how many verdicts flip at tolerances 1e-2, 1e-3 and 1e-4, and the
mutants that differ. Margins are compared exactly unless `--rel` allows a relative difference
(fp32 rounding: 1e-6). A racy mutant (a removed barrier, threads that collide on one element)
can differ between any two runs, so differing values are reported, not failed on; exits 1 when
the two stores hold different cells (a resume that lost or duplicated work), else 0.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbm_toolkit.store import Store  # noqa: E402  (after the checkout is on the path)

TOLERANCES = (1e-2, 1e-3, 1e-4)
Cell = tuple[str, float | None]
"""A cell's (outcome, margin)."""


def cells(store: Store, problems: Iterable[str] | None = None) -> dict[tuple[str, str], Cell]:
    """(mutant, input) -> (outcome, margin) of every cell, or of the cells of `problems`' mutants."""
    if problems is None:
        return {(r["mutant"], r["input"]): (r["outcome"], r["margin"]) for r in store.db["cells"].rows}
    keys = list(problems)
    rows = store.db.execute("select c.mutant, c.input, c.outcome, c.margin from cells c join mutants m "
                            f"on m.id = c.mutant where m.problem in ({','.join('?' * len(keys))})", keys)
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


def same_margin(a: float | None, b: float | None, rel: float = 0.0) -> bool:
    """Whether two margins agree: both None, both the same infinity, or within `rel` of the larger."""
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b))


def same_cell(a: Cell, b: Cell, rel: float = 0.0) -> bool:
    """Whether two cells agree in outcome and (to `rel`) in margin."""
    return a[0] == b[0] and same_margin(a[1], b[1], rel)


def passes(cell: Cell, tolerance: float) -> bool:
    """Whether a cell passes at `tolerance`."""
    outcome, margin = cell
    return outcome == "pass" and margin is not None and margin <= tolerance


def compare_cells(a: str | Path, b: str | Path, problems: Iterable[str] | None = None,
                  rel: float = 0.0) -> dict[str, Any]:
    """Two stores' cells compared (only `problems`' mutants when given): counts, the cells only in
    one, and every cell in both whose outcome or margin (to `rel`) differs, with its mutant named."""
    keys = None if problems is None else list(problems)
    first, second = Store(a, readonly=True), Store(b, readonly=True)
    try:
        left, right = cells(first, keys), cells(second, keys)
        both = sorted(left.keys() & right.keys())
        differ = [k for k in both if not same_cell(left[k], right[k], rel)]
        named = _mutants(first, {m for m, _ in differ}) if differ else {}
    finally:
        first.close()
        second.close()
    unknown = {"rule": "?", "problem": "?", "name": "?"}
    return {
        "first": str(a), "second": str(b), "rel": rel, "problems": keys,
        "cells": [len(left), len(right)], "equal": len(both) - len(differ),
        "only_first": sorted(left.keys() - right.keys()), "only_second": sorted(right.keys() - left.keys()),
        "differing": [{"mutant": m, "input": i, **named.get(m, unknown), "first": list(left[m, i]),
                       "second": list(right[m, i]), "outcome_differs": left[m, i][0] != right[m, i][0]}
                      for m, i in differ],
        "flips": {t: sum(passes(left[k], t) != passes(right[k], t) for k in differ) for t in TOLERANCES},
    }


def differing_mutants(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The mutants with differing cells, most first: id, name, rule, problem and how many cells."""
    count = Counter(d["mutant"] for d in result["differing"])
    about = {d["mutant"]: d for d in result["differing"]}
    return [{"mutant": m, "name": about[m]["name"], "rule": about[m]["rule"], "problem": about[m]["problem"],
             "cells": n} for m, n in count.most_common()]


def report(result: dict[str, Any]) -> str:
    """The comparison as the command prints it."""
    left, right = result["cells"]
    differ = result["differing"]
    beyond = f" beyond {result['rel']:g} relative" if result["rel"] else ""
    lines = [f"{result['first']}: {left} cells; {result['second']}: {right} cells; only in first "
             f"{len(result['only_first'])}, only in second {len(result['only_second'])}",
             f"differing: {len(differ)} cells ({sum(d['outcome_differs'] for d in differ)} in outcome, the rest in "
             f"margin{beyond}) of {len({d['mutant'] for d in differ})} mutants; verdict flips "
             + ", ".join(f"{n} at {t:g}" for t, n in result["flips"].items())]
    rules = Counter((d["rule"], d["problem"]) for d in differ)
    lines += [f"  {n:5d}  {rule:<28} {problem}" for (rule, problem), n in rules.most_common()]
    lines += [f"  mutant {m['mutant']} {m['name']} ({m['rule']}, {m['problem']}): {m['cells']} cells"
              for m in differing_mutants(result)]
    return "\n".join(lines)


def _mutants(store: Store, ids: set[str]) -> dict[str, dict[str, str]]:
    """Mutant id -> its rule, problem and display name."""
    marks = ",".join("?" * len(ids))
    rows = store.db.execute(f"select id, rule, problem, name from mutants where id in ({marks})", sorted(ids))
    return {r[0]: {"rule": r[1], "problem": r[2], "name": r[3]} for r in rows}


def main(argv: list[str] | None = None) -> int:
    """The command: print the comparison; 1 when the stores hold different cells."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--problems", help="only these problems' mutants (keys, comma-separated)")
    ap.add_argument("--rel", type=float, default=0.0, help="margins this close (relative) count as equal")
    args = ap.parse_args(argv)
    problems = [k.strip() for k in args.problems.split(",") if k.strip()] if args.problems else None
    result = compare_cells(args.first, args.second, problems, args.rel)
    print(report(result))
    return 1 if result["only_first"] or result["only_second"] else 0


if __name__ == "__main__":
    sys.exit(main())
