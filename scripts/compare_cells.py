"""Compare the kill matrices of two stores cell by cell (e.g. an interrupted-and-resumed run
against an uninterrupted one).

    python scripts/compare_cells.py A.db B.db

Prints the cell counts, cells only in one store, and cells whose outcome or margin differ; exits
non-zero when the matrices differ.
"""

from __future__ import annotations

import sys

from kbm_toolkit.store import Store


def cells(path: str) -> dict[tuple[str, str], tuple]:
    store = Store(path, readonly=True)
    return {(r["mutant"], r["input"]): (r["outcome"], r["margin"]) for r in store.db["cells"].rows}


def main(a: str, b: str) -> int:
    left, right = cells(a), cells(b)
    only_left, only_right = left.keys() - right.keys(), right.keys() - left.keys()
    differ = [k for k in left.keys() & right.keys() if left[k] != right[k]]
    print(f"{a}: {len(left)} cells; {b}: {len(right)} cells; only in first {len(only_left)}, "
          f"only in second {len(only_right)}, differing {len(differ)}")
    for k in differ[:10]:
        print(f"  {k}: {left[k]} vs {right[k]}")
    return 1 if only_left or only_right or differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
