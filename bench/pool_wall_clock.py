"""The kill matrix's wall clock, from the runs a store records: each evaluate run's GPUs, wall
time, cells and the tenths of the sample its cells fall in, then the time per tenth and per
machine size. The pool's build is summed from runs spread over sessions; this is that sum.

    python bench/pool_wall_clock.py --store .kbm/kb.db --runs 17-32

`--runs` picks the pool's runs (the store may hold others: targeted inputs on survivors, say).

A run's wall time goes from `started` to `finished` or, for an interrupted one, `stopped`; runs
killed outright recorded neither and are listed without one. A run that spans two tenths (it
finished one and began the next) has its time split between them by cells.

`--one-gpu` adds what the whole matrix takes on one GPU: each tenth's one-GPU seconds as
measured, and its cells that ran elsewhere (on more GPUs, or in a run with no end) at that
tenth's one-GPU rate, or the pooled one-GPU rate when the tenth has too few one-GPU cells.
`--retimed STORE:RUNS` adds a re-timing: a copy of the store whose runs on two GPUs were
removed (`bench/strip_runs.py`) and run again on one. Its runs' seconds count as measured on one
GPU for the cells they ran, their tenths take its rates, and time this store measured on one GPU
for cells the copy ran again is not counted twice. Cells the copy wrote that this store lacks are
work the pool never did (a stripped input check unsettles first-kill rows, say): their share of
a run's time is left out and the count printed.

A copy lives in git-ignored files that a later session may not have, so `--save-retiming FILE`
writes what the sum needs from it (its runs' times, cells per tenth, the cells it ran again) to a
small JSON record, and `--retimed FILE.json` reads one back; `--retimed` may repeat.

    python bench/pool_wall_clock.py --store kb.db --runs 3-7,12,16,18-43 --one-gpu \
        --retimed bench/retimings/one-h200-0-20.json --retimed bench/retimings/one-h200-20-40.json
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def tenth(mutant: str) -> float:
    """The narrowest tenth-share `--sample` that holds `mutant` (0.1 ... 1.0)."""
    from kbm_toolkit.store import in_sample

    return next(t / 10 for t in range(1, 11) if in_sample(mutant, t / 10))


def run_ids(text: str) -> set[int]:
    """`3,5-7` -> {3, 5, 6, 7}."""
    ids: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        first, _, last = part.partition("-")
        try:
            ids.update(range(int(first), int(last or first) + 1))
        except ValueError:
            raise SystemExit(f"--runs {text!r}: {part!r} is not a run id or a range like 17-32") from None
    return ids


def pool_runs(store: Any, only: set[int] | None = None) -> list[dict[str, Any]]:
    """Every evaluate run with cells (those in `only`, when given), oldest first."""
    runs = []
    for run_id, started, end, env in store.db.execute(
            "select id, started, coalesce(finished, stopped), environment from runs "
            "where kind = 'evaluate' order by id"):
        if only is not None and run_id not in only:
            continue
        tenths = Counter(tenth(m) for (m,) in store.db.execute("select mutant from cells where run = ?", [run_id]))
        if not tenths:
            continue
        env = json.loads(env or "{}")
        wall = (datetime.fromisoformat(end) - datetime.fromisoformat(started)).total_seconds() if end else None
        runs.append({"run": run_id, "gpus": env.get("gpus") or 1, "workers": env.get("workers"), "wall_s": wall,
                     "cells": sum(tenths.values()), "tenths": dict(sorted(tenths.items()))})
    return runs


def tenth_rates(runs: list[dict[str, Any]], gpus: int = 1) -> dict[float, tuple[int, float]]:
    """Tenth -> (cells, seconds) its runs on `gpus` GPUs with an end spent on it, time split by cells."""
    rates: dict[float, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in runs:
        if r["gpus"] == gpus and r["wall_s"] is not None:
            for t, n in r["tenths"].items():
                rates[t][0] += n
                rates[t][1] += r["wall_s"] * n / r["cells"]
    return {t: (int(n), s) for t, (n, s) in sorted(rates.items())}


def totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Wall seconds per (GPUs, tenth), a run's time split by its cells; and the runs with no end time."""
    sizes = sorted({r["gpus"] for r in runs if r["wall_s"] is not None})
    return {"seconds": {g: {t: s for t, (_, s) in tenth_rates(runs, g).items()} for g in sizes},
            "unknown": [r["run"] for r in runs if r["wall_s"] is None]}


MIN_RATE_CELLS = 1000  # fewer one-GPU cells than this in a tenth (a two-problem test run) set no rate of its own


def one_gpu_projection(runs: list[dict[str, Any]], retiming: list[dict[str, Any]] | None = None,
                       rerun: Counter | None = None) -> dict[float, dict[str, float]]:
    """Per tenth: its cells, one-GPU seconds measured (here and in a re-timing), and the rest priced at a one-GPU rate.

    `rerun` counts, per tenth, this store's one-GPU cells that the re-timing ran again: their
    share of this store's time there is dropped, the re-timing's time standing for them.
    """
    measured = tenth_rates(runs)
    retimed = tenth_rates(retiming) if retiming else {}
    own = {t: (n, s) for t, (n, s) in measured.items() if n >= MIN_RATE_CELLS}
    pooled = sum(n for n, _ in own.values()) / sum(s for _, s in own.values()) if own else None
    rates = {t: n / s for t, (n, s) in own.items()}
    rates.update({t: n / s for t, (n, s) in retimed.items() if n >= MIN_RATE_CELLS})  # it prices its own tenths
    cells: Counter = Counter()
    for r in runs:
        cells.update(r["tenths"])
    out = {}
    for t in sorted(cells):
        done, seconds = measured.get(t, (0, 0.0))
        again = min((rerun or {}).get(t, 0), done)
        if again:
            seconds, done = seconds * (done - again) / done, done - again
        retimed_cells, retimed_s = retimed.get(t, (0, 0.0))
        rate = rates.get(t, pooled)
        if rate is None:
            raise SystemExit("no one-GPU run with an end time to take a rate from")
        out[t] = {"cells": cells[t], "measured_s": seconds + retimed_s, "retimed_s": retimed_s,
                  "projected_s": max(0, cells[t] - done - retimed_cells) / rate, "rate": rate, "own_rate": t in rates}
    return out


def rerun_cells(store: Path, runs: list[dict[str, Any]], copy: Path, copy_runs: set[int]) -> Counter:
    """Per tenth, the cells of `runs` (ended, on one GPU) that the copy's `copy_runs` ran again."""
    ids = [r["run"] for r in runs if r["gpus"] == 1 and r["wall_s"] is not None]
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        db.execute("attach database ? as copy", [f"file:{copy}?mode=ro"])
        rows = db.execute(
            f"select a.mutant from cells a join copy.cells b on a.mutant = b.mutant and a.input = b.input "
            f"where a.run in ({','.join('?' * len(ids))}) and b.run in ({','.join('?' * len(copy_runs))})",
            [*ids, *sorted(copy_runs)]).fetchall()
    finally:
        db.close()
    return Counter(tenth(m) for (m,) in rows)


def retimed_runs(store: Path, copy: Path, copy_runs: set[int]) -> list[dict[str, Any]]:
    """The copy's `copy_runs`, their cells placed in tenths only where this store holds them; the rest `extra`."""
    from kbm_toolkit.store import Store

    runs = pool_runs(Store(copy, readonly=True), copy_runs)
    db = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        db.execute("attach database ? as pool", [f"file:{store}?mode=ro"])
        for r in runs:
            held = Counter(tenth(m) for (m,) in db.execute(
                "select c.mutant from cells c join pool.cells p on p.mutant = c.mutant and p.input = c.input "
                "where c.run = ?", [r["run"]]))
            r["tenths"], r["extra"] = dict(sorted(held.items())), r["cells"] - sum(held.values())
    finally:
        db.close()
    return runs


def save_retiming(path: Path, source: str, store: Path, runs: list[dict[str, Any]], again: Counter) -> None:
    """Write a re-timing's runs and the cells it ran again as a JSON record `--retimed` reads back."""
    record = {"source": f"bench/pool_wall_clock.py --store {store} --retimed {source}",
              "saved": datetime.now().astimezone().isoformat(timespec="seconds"), "runs": runs,
              "ran_again": {str(t): n for t, n in sorted(again.items())}}
    path.write_text(json.dumps(record, indent=1) + "\n")


def load_retiming(path: Path) -> tuple[list[dict[str, Any]], Counter]:
    """A re-timing record's runs (tenths as numbers again) and the cells it ran again, per tenth."""
    try:
        record = json.loads(path.read_text())
        runs = [{**r, "tenths": {float(t): n for t, n in r["tenths"].items()}} for r in record["runs"]]
        return runs, Counter({float(t): n for t, n in record.get("ran_again", {}).items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SystemExit(f"--retimed {path}: not a re-timing record ({type(e).__name__}: {e})") from None


def retiming(spec: str, store: Path, runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Counter]:
    """One `--retimed` argument, a record file or STORE:RUNS, as its runs and the cells it ran again."""
    if spec.endswith(".json"):
        return load_retiming(Path(spec))
    path, _, ids = spec.rpartition(":")
    if not path or not Path(path).is_file():
        raise SystemExit(f"--retimed {spec}: expected STORE:RUNS with an existing store, or a record FILE.json")
    copy_runs = retimed_runs(store, Path(path), run_ids(ids))
    if not copy_runs:
        raise SystemExit(f"--retimed {spec}: no evaluate run with cells among those runs")
    return copy_runs, rerun_cells(store, runs, Path(path), {r["run"] for r in copy_runs})


def run_line(r: dict[str, Any]) -> str:
    """One run as a table row: GPUs, wall time, cells, rate and how its cells spread over tenths."""
    wall = f"{r['wall_s']:7.0f}" if r["wall_s"] is not None else "      ?"
    rate = f"{r['cells'] / r['wall_s']:7.1f}" if r["wall_s"] else "      ?"
    spread = ", ".join(f"{t - 0.1:.1f}–{t:.1f} {n / r['cells']:.0%}" for t, n in r["tenths"].items()
                       if n / r["cells"] >= 0.01)
    if r.get("extra"):
        spread += f", not in the pool {r['extra'] / r['cells']:.0%}"
    return f"{r['run']:>5} {r['gpus']:>4} {wall} {r['cells']:>7,} {rate}  {spread}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--runs", type=run_ids, help="only these runs, e.g. 3-7,17-32 (default: every evaluate run)")
    ap.add_argument("--one-gpu", action="store_true", help="also project the whole matrix on one GPU")
    ap.add_argument("--retimed", metavar="STORE:RUNS|FILE.json", action="append", default=[],
                    help="a copy re-timing some of this store's work on one GPU, and its runs; or its saved record")
    ap.add_argument("--save-retiming", type=Path, metavar="FILE.json", help="write the one STORE:RUNS re-timing's record here")
    ap.add_argument("--json", type=Path, help="also write the runs and totals here")
    args = ap.parse_args()
    from kbm_toolkit.store import Store

    if not args.store.is_file():
        sys.exit(f"{args.store}: no such store")
    if args.save_retiming and [s.endswith(".json") for s in args.retimed] != [False]:
        sys.exit("--save-retiming: give exactly one --retimed STORE:RUNS to save")
    runs = pool_runs(Store(args.store, readonly=True), args.runs)
    if not runs:
        sys.exit(f"{args.store}: no evaluate run with cells" + (" among --runs" if args.runs else ""))
    print(f"{'run':>5} {'GPUs':>4} {'wall s':>7} {'cells':>7} {'cells/s':>7}  tenths (share of the run's cells)")
    for r in runs:
        print(run_line(r))
    result = totals(runs)
    for gpus, per in result["seconds"].items():
        print(f"on {gpus} GPU{'s' if gpus > 1 else ''}: {sum(per.values()):,.0f} s; "
              + ", ".join(f"{t - 0.1:.1f}–{t:.1f} {s:,.0f} s" for t, s in per.items() if s >= 1))
    if result["unknown"]:
        print(f"runs {', '.join(map(str, result['unknown']))} were killed outright and recorded no end: "
              "their time is not in the sums")
    if args.one_gpu or args.retimed:
        other, again = [], Counter()
        for spec in args.retimed:
            copy_runs, ran_again = retiming(spec, args.store, runs)
            if args.save_retiming:
                save_retiming(args.save_retiming, spec, args.store, copy_runs, ran_again)
            print(f"re-timed in {spec}:")
            for r in copy_runs:
                print(run_line(r))
            extra = sum(r.get("extra", 0) for r in copy_runs)
            if extra:
                print(f"  {extra:,} of its cells are not in {args.store} (work the pool never did): "
                      f"{sum(r['wall_s'] * r.get('extra', 0) / r['cells'] for r in copy_runs):,.0f} s left out")
            other += copy_runs
            again += ran_again
        result["one_gpu"] = projection = one_gpu_projection(runs, other, again)
        for t, p in projection.items():
            print(f"  {t - 0.1:.1f}–{t:.1f}: {p['cells']:>6,} cells, {p['measured_s']:6,.0f} s measured on one GPU"
                  + (f" ({p['retimed_s']:,.0f} s of it re-timed)" if p["retimed_s"] else "")
                  + f" + {p['projected_s']:6,.0f} s projected at {p['rate']:.1f} cells/s"
                  + ("" if p["own_rate"] else " (pooled)"))
        measured = sum(p["measured_s"] for p in projection.values())
        projected = sum(p["projected_s"] for p in projection.values())
        print(f"the whole matrix on one GPU: {measured + projected:,.0f} s "
              f"({measured:,.0f} s measured, {projected:,.0f} s projected)")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, **result}, indent=1))


if __name__ == "__main__":
    main()
