"""Figures about a pool that `kbm audit` does not print, for docs/kernelbench-pool.md.

    python dev/pool_figures.py                      # the shipped KernelBench pool
    python dev/pool_figures.py --store .kbm/kb.db --sample 0.9

Against the official check (`kernelbench`), over `kbm audit`'s default denominator (every built-in
protocol and every one the store keeps, e.g. `kb-targets`; `--builtin`: the built-in ones alone):
the miss rate with the vacuous problems included, the witnessed share of the distinct mutants,
the mutants only one denominator protocol witnesses, the per-problem miss rates (median,
percentiles, the worst ten), the thread/block index swaps, the stride and transposed-access rules
and the rest among the indexing mutants, boundary without its grid
rounding rule, synchronization by rule, and the precision misses by rule.
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
# indexing rules that confuse a stride or read a transposed layout: the paper's examples of the family
INDEX_STRIDES = {"a-row-stride-n", "b-row-stride-k", "row-store-stride-k", "flatten-height-use-width",
                 "output-position-height-first"}
GRID_FLOOR = "grid-ceil2floor-host"  # drops work only at sizes no multiple of the block: odd shapes alone witness it
MIN_WITNESSED = 5  # a problem's miss rate is quoted only over at least this many witnessed mutants


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, help="a store file (default: the shipped KernelBench pool)")
    ap.add_argument("--sample", type=float, help="score only this share of each problem's mutants")
    ap.add_argument("--accounting", choices=["tolerance", "union"], default="tolerance",
                    help="at which tolerance witnesses count (kbm audit --accounting)")
    ap.add_argument("--builtin", action="store_true", help="the built-in protocols alone as the denominator")
    args = ap.parse_args()
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import audit, audit_store, scored
    from kbm_toolkit.protocols.registry import all_protocols, default_denominator, load_protocol
    from kbm_toolkit.store import Store, shipped_store_path
    from kbm_toolkit.vocabulary import Accounting

    path = args.store or shipped_store_path()
    if not path.is_file():
        ap.error(f"{path}: no such store")
    store = Store(path, readonly=True)
    official = load_protocol("kernelbench")
    denominator = all_protocols() if args.builtin else default_denominator(store)  # the latter as `kbm audit`
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

    alone = {p.name: scored(official, kept, [p], accounting=accounting)[2] for p in denominator}
    sole = {name: sum(len(w - set().union(*(alone[o].get(k, set()) for o in alone if o != name)))
                      for k, w in seen_by.items())
            for name, seen_by in alone.items()}
    print("witnessed by one protocol alone: " + ", ".join(f"{n} {c:,}" for n, c in sorted(sole.items(), key=lambda x: -x[1])
                                                          if c))

    rates = sorted((100 * len(w - caught.get(k, set())) / len(w), k, len(w))
                   for k, w in seen.items() if len(w) >= MIN_WITNESSED)
    values = [r for r, _, _ in rates]
    print(f"per problem ({len(values)} with >= {MIN_WITNESSED} witnessed): median {statistics.median(values):.1f}%, "
          f"{sum(v == 0 for v in values)} lose nothing, 75th percentile {statistics.quantiles(values, n=4)[2]:.1f}%, "
          f"90th {statistics.quantiles(values, n=10)[8]:.1f}%")
    for rate, key, n in reversed(rates[-10:]):
        print(f"  {rate:.0f}% {key} ({n} witnessed)")

    rows = {m.problem.key: m.mutants for m in kept}
    witnessed, missed, precision = Counter(), Counter(), Counter()  # by (family, rule)
    for key, mutants in seen.items():
        for m in mutants:
            row = rows[key][m]
            witnessed[row["family"], row["rule"]] += 1
            missed[row["family"], row["rule"]] += m not in caught.get(key, set())

    def share(family: str, rules: set[str] | None = None, leave_out: set[str] = set()) -> tuple[int, int]:
        chosen = [k for k in witnessed if k[0] == family and (rules is None or k[1] in rules) and k[1] not in leave_out]
        return sum(witnessed[k] for k in chosen), sum(missed[k] for k in chosen)

    indexing = share("indexing")[0]
    for what, rules in (("swap indices", INDEX_SWAPS), ("confuse a stride or transpose", INDEX_STRIDES)):
        n, lost = share("indexing", rules)
        print(f"indexing: {n:,} of {indexing:,} witnessed {what}, missed at {100 * lost / max(n, 1):.1f}%")
    n, lost = share("indexing", leave_out=INDEX_SWAPS | INDEX_STRIDES)
    print(f"indexing: the other {n:,} witnessed missed at {100 * lost / max(n, 1):.1f}%")
    n, lost = share("boundary", leave_out={GRID_FLOOR})
    grid, grid_lost = share("boundary", {GRID_FLOOR})
    print(f"boundary: {GRID_FLOOR} {grid_lost} missed of {grid} witnessed; without it {100 * lost / max(n, 1):.1f}% "
          f"of {n:,}")
    # the paper's Table 6 gives its two barrier rules' rates (sync-remove 29%, sync2syncwarp 26%): the family's
    # rate against the paper's is then a question of those two against the rules kbm has besides
    sync = sorted(((witnessed[k], missed[k], k[1]) for k in witnessed if k[0] == "synchronization"), reverse=True)
    print("synchronization by rule: " + ", ".join(f"{rule} {lost} missed of {n} ({100 * lost / max(n, 1):.0f}%)"
                                                  for n, lost, rule in sync))
    precision = Counter({rule: missed[f, rule] for f, rule in missed if f == "precision" and missed[f, rule]})
    print(f"precision misses: {sum(precision.values())}, by rule: "
          + ", ".join(f"{rule} {n}" for rule, n in precision.most_common(3)))


if __name__ == "__main__":
    main()
