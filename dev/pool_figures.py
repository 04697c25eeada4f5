"""Figures about a pool that `kbm audit` does not print, for docs/kernelbench-pool.md.

    python dev/pool_figures.py                      # the shipped KernelBench pool
    python dev/pool_figures.py --store .kbm/kb.db --sample 0.9

Against the official check (`kernelbench`), over the denominator of every built-in protocol:
the miss rate with the vacuous problems included, the witnessed share of the distinct mutants,
the per-problem miss rates (median, percentiles, the worst ten), the thread/block index swaps
among the indexing mutants, and the precision misses by rule.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# indexing rules that swap a thread index for a block index or one axis for another
INDEX_SWAPS = {"tidx2bidx", "tidx2tidy", "bidx2bidy", "bidx2tidx", "bdim2gdim", "grid-x-use-block-y"}
MIN_WITNESSED = 5  # a problem's miss rate is quoted only over at least this many witnessed mutants


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, help="a store file (default: the shipped KernelBench pool)")
    ap.add_argument("--sample", type=float, help="score only this share of each problem's mutants")
    ap.add_argument("--accounting", choices=["tolerance", "union"], default="tolerance",
                    help="at which tolerance witnesses count (kbm audit --accounting)")
    args = ap.parse_args()
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import audit, audit_store, scored
    from kbm_toolkit.protocols.registry import all_protocols, load_protocol
    from kbm_toolkit.store import Store, shipped_store_path
    from kbm_toolkit.vocabulary import Accounting

    path = args.store or shipped_store_path()
    if not path.is_file():
        ap.error(f"{path}: no such store")
    store = Store(path, readonly=True)
    official, denominator = load_protocol("kernelbench"), all_protocols()
    matrices = load_matrices(store, min(p.tolerance for p in denominator), sample=args.sample)
    accounting = Accounting(args.accounting)
    report = audit_store(store, official, denominator, matrices=matrices, sample=args.sample,  # as `kbm audit`
                         accounting=accounting)
    excluded = report["excluded"]
    print(f"kernelbench misses {100 - report['detection_pct']:.1f}% of {report['witnessed']:,} witnessed "
          f"({len(excluded)} problems left out; {report['witnessed_as']})")
    everything = audit(official, matrices, denominator, excluded={}, accounting=accounting)
    low, high = (100 - x for x in reversed(everything["band90_pct"]))
    print(f"with them included: {100 - everything['detection_pct']:.1f}% (band {low:.1f}–{high:.1f}%) "
          f"of {everything['witnessed']:,}")

    kept = [m for m in matrices if m.problem.key not in excluded]
    mine, _, seen = scored(official, kept, denominator, accounting=accounting)
    caught = mine.detected
    print(f"witnessed {sum(len(w) for w in seen.values()):,} of {sum(len(m.mutants) for m in kept):,} "
          "distinct mutants of the refereeable problems")

    rates = sorted((100 * len(w - caught.get(k, set())) / len(w), k, len(w))
                   for k, w in seen.items() if len(w) >= MIN_WITNESSED)
    values = [r for r, _, _ in rates]
    print(f"per problem ({len(values)} with >= {MIN_WITNESSED} witnessed): median {statistics.median(values):.1f}%, "
          f"{sum(v == 0 for v in values)} lose nothing, 75th percentile {statistics.quantiles(values, n=4)[2]:.1f}%, "
          f"90th {statistics.quantiles(values, n=10)[8]:.1f}%")
    for rate, key, n in reversed(rates[-10:]):
        print(f"  {rate:.0f}% {key} ({n} witnessed)")

    rows = {m.problem.key: m.mutants for m in kept}
    swaps, swaps_missed, precision = Counter(), Counter(), Counter()
    for key, mutants in seen.items():
        for m in mutants:
            row, missed = rows[key][m], m not in caught.get(key, set())
            if row["family"] == "indexing":
                swaps[row["rule"] in INDEX_SWAPS] += 1
                swaps_missed[row["rule"] in INDEX_SWAPS] += missed
            elif row["family"] == "precision" and missed:
                precision[row["rule"]] += 1
    print(f"indexing: {swaps[True]:,} of {swaps[True] + swaps[False]:,} witnessed swap indices, "
          f"missed at {100 * swaps_missed[True] / max(swaps[True], 1):.1f}%")
    print(f"precision misses: {sum(precision.values())}, by rule: "
          + ", ".join(f"{rule} {n}" for rule, n in precision.most_common(3)))


if __name__ == "__main__":
    main()
