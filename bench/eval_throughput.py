"""Evaluation throughput on a GPU: cells per second, and where the wall time goes.

Runs `kbm run` in-process on a store whose problems are already gated and mutated, then splits
the run's wall time into time inside launches (the mutant's launcher and kernel, synchronised),
time in references and in the correct kernel, and everything else: building inputs, comparing,
the pipe between worker and parent, worker restarts after crashes, and the store.

    python bench/eval_throughput.py --store .kbm/demo.db --inputs gate --level demo [--json OUT]

A stored run's split is `kbm runs --run N`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def analyse(store: Any, run_id: int, wall_s: float | None = None, workers: int | None = None) -> dict[str, Any]:
    """The split of one evaluate run's worker time (`workers` at once: the run records it, older
    runs need it given), from what it stored."""
    run = store.db.execute("select started, coalesce(finished, stopped), environment, stats from runs where id = ?",
                           [run_id]).fetchone()
    workers = workers or json.loads(run[2] or "{}").get("workers") or 1
    if wall_s is None:
        from datetime import datetime

        if not run or not run[1]:
            raise SystemExit(f"run {run_id} has neither finished nor recorded when it stopped "
                             "(killed outright): its wall time is unknown")
        wall_s = (datetime.fromisoformat(run[1]) - datetime.fromisoformat(run[0])).total_seconds()
    cells, launch_ms = store.db.execute("select count(*), coalesce(sum(ms), 0) from cells where run = ?",
                                        [run_id]).fetchone()
    outcomes = dict(store.db.execute("select outcome, count(*) from cells where run = ? group by 1", [run_id]).fetchall())
    inputs, ref_ms, correct_ms = store.db.execute(
        "select count(*), coalesce(sum(ref_ms), 0), coalesce(sum(kernel_ms), 0) from input_checks where run = ?",
        [run_id]).fetchone()
    wall_ms = wall_s * 1000 * workers  # worker time: each worker's launches are a share of its own wall time
    stats = json.loads(run[3]) if run[3] else {}
    split = stats.get("seconds")
    if split:  # measured by the run itself: the stored input checks miss a restarted worker's re-checks
        wall_ms, launch_ms, ref_ms, correct_ms = (1000 * split[k] for k in ("wall", "launches", "references", "correct"))
    return {"run": run_id, "wall_s": round(wall_s, 2), "workers": workers, "cells": cells, "inputs": inputs,
            "cells_per_s": round(cells / wall_s, 1) if wall_s else None,
            "share_in_launches": round(launch_ms / wall_ms, 4), "share_in_references": round((ref_ms + correct_ms) / wall_ms, 4),
            "share_overhead": round(1 - (launch_ms + ref_ms + correct_ms) / wall_ms, 4),
            "median_cell_ms": _median(store, run_id), "outcomes": outcomes, "seconds": split,
            "spares": stats.get("spares")}


def split_table(seconds: dict[str, float]) -> str:
    """A run's measured split of its worker time, one part per line, largest first."""
    from kbm_toolkit.analysis.runs import TIME_SPLIT, largest_parts

    what = {**TIME_SPLIT, "other": "the rest: pipes between worker and parent, task set-up"}
    wall = seconds["wall"] or 1.0
    return "\n".join(f"{v:9.1f} s {v / wall:6.1%}  {k}: {what.get(k, '')}" for v, k in largest_parts(seconds))


def last_run(store: Any) -> int:
    """The id of the store's latest evaluate run."""
    return store.db.execute("select max(id) from runs where kind = 'evaluate'").fetchone()[0]


def _median(store: Any, run_id: int) -> float | None:
    rows = [r[0] for r in store.db.execute("select ms from cells where run = ? and ms is not null order by ms", [run_id])]
    return round(rows[len(rows) // 2], 4) if rows else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--inputs", default="gate", help="spec source, as for kbm run")
    ap.add_argument("--level", default="demo")
    ap.add_argument("--kernelbench")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from kbm_toolkit.store import Store

    store = Store(args.store)
    from kbm_toolkit.cli import device_env
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.problems.problem_set import ProblemSet
    from kbm_toolkit.evaluation.input_sources import resolve

    keys = {r[0] for r in store.db.execute("select distinct problem from mutants")}
    problems = [p for p in ProblemSet.discover(args.kernelbench).select((), args.level) if p.key in keys]
    env = device_env()
    start = time.perf_counter()
    summary = run_evaluation(store, problems, resolve(args.inputs), args.inputs, env["arch"], env)
    wall = time.perf_counter() - start
    result = {**analyse(store, last_run(store), wall), "restarts": summary.restarts,
              "waited_for_workers_s": round(summary.waited_s, 1),
              "quarantined": len(summary.quarantined), "problems": len(problems), "gpu": env.get("gpu")}
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if result["seconds"]:
        print(split_table(result["seconds"]))
    if result.get("spares"):  # runs since 2026-11-30: were spares too few, or too slow to warm?
        sp = result["spares"]
        print(f"children put to work: {sp['starts']}, {sp['found_warm']} of them warm already; "
              f"{sp.get('lost', 0)} spares died unused; from spawn to warm "
              f"{sp['warm_s_median']} s median, {sp['warm_s_max']} s at most")
        if sp.get("warm_parts_median"):  # later runs: where the warm-up went, part by part
            print("warm-up, median s per part: "
                  + ", ".join(f"{part} {s}" for part, s in sp["warm_parts_median"].items()))
    print(f"{result['cells']} cells in {result['wall_s']} s = {result['cells_per_s']} cells/s; "
          f"of {result['workers']} workers' time: launches {result['share_in_launches']:.1%}, references and correct kernel "
          f"{result['share_in_references']:.1%}, overhead {result['share_overhead']:.1%}"
          + (f"; {result['restarts']} worker restarts, {result['waited_for_workers_s']} s waiting for one to start"
             if "restarts" in result else ""))


if __name__ == "__main__":
    main()
