"""Compare the kill matrices of two stores cell by cell (e.g. an interrupted-and-resumed run
against an uninterrupted one).

    python dev/compare_cells.py A.db B.db

Prints the cell counts, the cells only in one store, and the cells whose outcome or margin
differ, grouped by rule, with how many verdicts flip at tolerances 1e-2, 1e-3 and 1e-4. A racy
mutant (a removed barrier, threads that collide on one element) can differ between any two runs,
so differing values are reported, not failed on; exits 1 when the two stores hold different
cells (a resume that lost or duplicated work), else 0.
"""

from __future__ import annotations

import sys
from collections import Counter

from kbm_toolkit.store import Store

TOLERANCES = (1e-2, 1e-3, 1e-4)


def cells(store: Store) -> dict[tuple[str, str], tuple]:
    return {(r["mutant"], r["input"]): (r["outcome"], r["margin"]) for r in store.db["cells"].rows}


def passes(cell: tuple, tolerance: float) -> bool:
    outcome, margin = cell
    return outcome == "pass" and margin is not None and margin <= tolerance


def main(a: str, b: str) -> int:
    first, second = Store(a, readonly=True), Store(b, readonly=True)
    left, right = cells(first), cells(second)
    only_left, only_right = left.keys() - right.keys(), right.keys() - left.keys()
    differ = [k for k in left.keys() & right.keys() if left[k] != right[k]]
    outcome_differs = sum(left[k][0] != right[k][0] for k in differ)
    flips = {t: sum(passes(left[k], t) != passes(right[k], t) for k in differ) for t in TOLERANCES}
    print(f"{a}: {len(left)} cells; {b}: {len(right)} cells; only in first {len(only_left)}, "
          f"only in second {len(only_right)}")
    print(f"differing: {len(differ)} cells ({outcome_differs} in outcome, the rest in margin) of "
          f"{len({k[0] for k in differ})} mutants; verdict flips "
          + ", ".join(f"{n} at {t:g}" for t, n in flips.items()))
    rules = Counter()
    for mutant, _ in differ:
        row = first.db.execute("select rule, problem from mutants where id = ?", [mutant]).fetchone()
        rules[tuple(row) if row else ("?", "?")] += 1
    for (rule, problem), n in rules.most_common():
        print(f"  {n:5d}  {rule:<28} {problem}")
    return 1 if only_left or only_right else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
