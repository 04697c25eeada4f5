"""A copy of a store without some evaluate runs' work, so that work can be timed again elsewhere.

    python bench/strip_runs.py .kbm/kb.db --runs 20-22 --out .kbm/kb-rerun.db

Parts of the KernelBench pool ran on two H200s; to measure the whole build on one, those runs'
work is removed from a copy and redone there (runs 3-22 for the first 30%; runs 20-22 for
20-30% and a third of 30-40%, redone with `kbm run --first-kill --sample 0.3`, then 0.4), and
`bench/pool_wall_clock.py --retimed` sums the new runs with the one-H200 runs kept.

From the copy it deletes the runs' cells and input checks, returns the mutants their probe
quarantined to `distinct` (the redo probes them again), and records every problem they touched
as evaluated up to the share below the first tenth they removed there (0%, with no full rows,
when that is its first tenth), so `kbm run --sample` plans that work again. A later run's input
check replaces an earlier one's, so a few checks the earlier tenths relied on go too, and the
redo writes some cells the pool never ran (first-kill rows a missing check leaves unsettled);
`bench/pool_wall_clock.py` leaves those out. The source is untouched.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.pool_wall_clock import run_ids, tenth  # noqa: E402
from kbm_toolkit.store import copy_store  # noqa: E402


def strip_runs(db: sqlite3.Connection, runs: list[int]) -> dict[str, int]:
    """Remove `runs`' work from `db` as described above; return how many rows of each kind."""
    marks = ", ".join("?" * len(runs))
    db.create_function("kbm_tenth", 1, tenth, deterministic=True)
    first = db.execute(f"select m.problem, min(kbm_tenth(c.mutant)) from cells c join mutants m on m.id = c.mutant "
                       f"where c.run in ({marks}) group by m.problem", runs).fetchall()
    counts = {"problems": len(first)}
    with db:
        counts["quarantines"] = db.execute(
            f"update mutants set status = 'distinct' where status = 'crash_probe' and id in (select c.mutant "
            f"from cells c join inputs i on i.id = c.input where i.label = 'probe' and c.run in ({marks}))",
            runs).rowcount
        counts["cells"] = db.execute(f"delete from cells where run in ({marks})", runs).rowcount
        counts["input checks"] = db.execute(f"delete from input_checks where run in ({marks})", runs).rowcount
        for key, share in first:
            below = round(share - 0.1, 1)
            db.execute("update problems set sample = ?, full_rows = case when ? = 0 then null "
                       "else min(coalesce(full_rows, ?), ?) end where key = ?", [below, below, below, below, key])
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--runs", required=True, help="the evaluate runs to remove, e.g. 3-7,12,18-22")
    ap.add_argument("--out", type=Path, required=True, help="the copy to write (must not exist)")
    args = ap.parse_args()
    if not args.store.is_file():
        ap.error(f"{args.store}: no such store")
    if args.out.exists():
        ap.error(f"{args.out}: already exists; remove it first")
    runs = sorted(run_ids(args.runs))
    src = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    kinds = dict(src.execute(f"select id, kind from runs where id in ({', '.join('?' * len(runs))})", runs).fetchall())
    wrong = [f"{r} ({kinds[r]})" if r in kinds else f"{r} (absent)" for r in runs if kinds.get(r) != "evaluate"]
    if wrong:
        ap.error(f"not evaluate runs of {args.store}: {', '.join(wrong)}")
    src.close()
    copy_store(args.store, args.out)
    db = sqlite3.connect(args.out)
    counts = strip_runs(db, runs)
    db.execute("vacuum")
    db.close()
    print(f"wrote {args.out}: " + ", ".join(f"{n:,} {k}" for k, n in counts.items()) + " reset")


if __name__ == "__main__":
    main()
