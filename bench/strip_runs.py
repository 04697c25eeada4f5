"""A copy of a store without some evaluate runs' work, so that work can be timed again elsewhere.

    python bench/strip_runs.py .kbm/kb.db --runs 3-7,12,16,18-22 --out .kbm/kb-rerun.db

The KernelBench pool's first 30% ran on two H200s; to measure the whole build on one, those runs'
work is removed from a copy and redone there (`kbm run --sample 0.1`, then `--first-kill` at 0.2,
0.3 and 0.4), and `bench/pool_wall_clock.py` sums the new runs with the one-H200 runs kept.

From the copy it deletes the runs' cells and input checks, returns the mutants their probe
quarantined to `distinct` (the redo probes them again), and records every problem they touched
as 0% evaluated with no full rows, as a problem is before its first run. The source is untouched.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.pool_wall_clock import run_ids  # noqa: E402
from kbm_toolkit.store import copy_store  # noqa: E402


def strip_runs(db: sqlite3.Connection, runs: list[int]) -> dict[str, int]:
    """Remove `runs`' work from `db` as described above; return how many rows of each kind."""
    marks = ", ".join("?" * len(runs))
    touched = [r[0] for r in db.execute(
        f"select distinct m.problem from cells c join mutants m on m.id = c.mutant where c.run in ({marks})", runs)]
    counts = {"problems": len(touched)}
    with db:
        counts["quarantines"] = db.execute(
            f"update mutants set status = 'distinct' where status = 'crash_probe' and id in (select c.mutant "
            f"from cells c join inputs i on i.id = c.input where i.label = 'probe' and c.run in ({marks}))",
            runs).rowcount
        counts["cells"] = db.execute(f"delete from cells where run in ({marks})", runs).rowcount
        counts["input checks"] = db.execute(f"delete from input_checks where run in ({marks})", runs).rowcount
        db.executemany("update problems set sample = 0.0, full_rows = null where key = ?", [[k] for k in touched])
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
