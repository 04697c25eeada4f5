"""Time `kbm tui` from start to a populated overview, then opening its largest miss pattern.

    python bench/tui_open.py                      # the shipped store and a synthetic 20,000 x 10 one
    python bench/tui_open.py --mutants 20000 --inputs 10 --problems 200
    python bench/tui_open.py --first-kill          # killed mutants keep only their first killing cell

The synthetic store has real structure (problems, mutants in every family, input checks and
cells, a quarter of the mutants killed) but no GPU data; the app runs headless (Textual's
run_test) at 120 x 40. With `--first-kill` it is shaped like the KernelBench pool, which `kbm run
--first-kill` filled: every input but the first has gaps, which the scorer must account for.

The baseline, measured on each store just before the app opens it: `load_matrices` once and
`audit_store` of every installed protocol, what `kbm audit` computes for the figures the overview
shows. The last line is the ratio of the app's time to a populated overview over that baseline's.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.score import audit_store
from kbm_toolkit.mutation.rules import FAMILIES
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.protocols.registry import all_protocols
from kbm_toolkit.store import Store, shipped_store_path
from kbm_toolkit.tui.app import KbmApp, MutantsScreen


def synthetic(path: Path, mutants: int, inputs: int, problems: int, first_kill: bool = False) -> Path:
    """A store shaped like a measured pool: official-trial inputs (shared by the protocols)."""
    rng = random.Random(0)
    store = Store(path)
    run = store.start_run("evaluate", {"gpu": "synthetic"})
    seeds = trial_seeds(inputs)
    per = mutants // problems
    with store.db.conn:
        for p in range(problems):
            key = f"level1/{p + 1}_Synthetic{p}"
            store.db["problems"].insert({"key": key, "level": "level1", "number": p + 1, "name": f"Synthetic{p}",
                                         "origin": "kernelbench", "path": key})
            specs = [InputSpec.make(key, s, label=f"official trial {i}") for i, s in enumerate(seeds)]
            store.db["inputs"].insert_all([{"id": s.id, "problem": key, "spec": "{}", "label": s.label} for s in specs])
            store.db["input_checks"].insert_all([{"input": s.id, "substrate_hash": "h", "run": run, "valid": 1,
                                                  "outcome": "pass", "margin": 1e-6} for s in specs])
            rows, cells = [], []
            for m in range(per):
                mid = f"{p:04d}{m:06d}"
                rows.append({"id": mid, "problem": key, "substrate_hash": "h", "rule": "r", "status": "distinct",
                             "family": FAMILIES[m % len(FAMILIES)], "name": f"{key} kernel.cu:1:1 r: replace 'a' with 'b'"})
                killed = rng.random() < 0.25
                row = [{"mutant": mid, "input": s.id, "outcome": "pass", "run": run,
                        "margin": 0.5 if killed and i == 0 else 1e-7} for i, s in enumerate(specs)]
                cells += row[:1] if killed and first_kill else row
            store.db["mutants"].insert_all(rows)
            store.db["cells"].insert_all(cells)
    store.close()
    return path


async def _open(path: Path) -> tuple[float, float]:
    """Seconds to a populated overview, then to the list of the largest miss pattern's mutants."""
    app = KbmApp(path, all_protocols())
    start = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        while app.data is None:
            if not app.is_running:
                raise SystemExit("the app stopped before the overview was populated")
            await pilot.pause(0.01)
        await pilot.pause()
        overview = time.perf_counter() - start
        await pilot.press("p")
        await pilot.pause()
        start = time.perf_counter()
        await pilot.press("enter")  # the first row: patterns are listed largest first
        while not isinstance(app.screen, MutantsScreen):
            await pilot.pause(0.01)
        await pilot.pause()
        return overview, time.perf_counter() - start


def _audits(path: Path) -> float:
    """Seconds for the baseline: every installed protocol's audit of the store, from one load of its cells."""
    protocols = all_protocols()
    start = time.perf_counter()
    store = Store(path, readonly=True)
    matrices = load_matrices(store, min(p.tolerance for p in protocols))
    for p in protocols:
        audit_store(store, p, protocols, matrices=matrices)
    store.close()
    return time.perf_counter() - start


def _measure(path: Path) -> tuple[float, float, float]:
    """(baseline s, app s to a populated overview, app s to the largest pattern's list) on one store."""
    baseline = _audits(path)
    return (baseline, *asyncio.run(_open(path)))


def _words(baseline: float, overview: float, pattern: float) -> str:
    return (f"{overview:.2f} s to a populated overview, {pattern:.2f} s to list the largest miss pattern; "
            f"load_matrices + audit_store of every protocol {baseline:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutants", type=int, default=20000)
    parser.add_argument("--inputs", type=int, default=10)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--first-kill", action="store_true", help="killed mutants have no cells after their first kill")
    args = parser.parse_args()
    ratios = []
    if shipped_store_path().is_file():
        timed = _measure(shipped_store_path())
        print("shipped store: " + _words(*timed))
        ratios.append(("shipped", timed))
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = synthetic(Path(tmp) / "synthetic.db", args.mutants, args.inputs, args.problems, args.first_kill)
        built = time.perf_counter() - start
        shape = ", first-kill" if args.first_kill else ""
        timed = _measure(path)
        print(f"synthetic store{shape}, {args.mutants:,} mutants x {args.inputs} inputs (built in {built:.1f} s): "
              + _words(*timed))
        ratios.append(("synthetic", timed))
    print("ratio, app to a populated overview / the audits' baseline: "
          + "; ".join(f"{name} {app:.2f} s / {base:.2f} s = {app / base:.2f}x" for name, (base, app, _) in ratios))


if __name__ == "__main__":
    main()
