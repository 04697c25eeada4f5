"""Evaluation throughput on a GPU: a baseline evaluator against this checkout's, on one slice.

Both evaluators run `kbm run` in a subprocess of their own, in the same call, on copies of one
input store, alternating (baseline, this checkout) `--repeat` times. The baseline is another
checkout (`--baseline PATH`), or a commit (`--baseline-commit SHA`) that the script checks out
with `git worktree add`; each subprocess has its own checkout on PYTHONPATH and as its working
folder, so it imports its own kbm_toolkit. Then one table gives, per run: cells, wall seconds,
cells per second, where its workers' time went (the run's stored `runs.stats.seconds`, per
`kbm_toolkit.analysis.runs.TIME_SPLIT`), the share outside launches, and the comparing seconds
against their floor (bytes compared / the GPU's read bandwidth, measured here), over all cells and
over the problems whose comparisons read at least 1 GB each (the issue's measure: on small outputs
a comparison is per-call latency), and the same for the overwrite checks (every watched storage
read once). Its last lines give the goals (new/old cells/s >= 1.5x, new compare/floor <= 1.3, new
share outside launches <= 15%), that share's floor on this slice (comparing and checking at one
read of each tensor, each crashed cell at a crash's error latency alone, measured here, nothing
else), and whether the two evaluators' cells
agree (outcome, and margin to fp32 rounding), counting apart the differing cells the old
evaluator measured after a write it restored from copies the write could reach. With `--repeat 2`
each evaluator's two runs are also compared with each other, and the cells old and new differ in
are split into those that differ run to run (the mutant's own races, or reads of memory it does
not own) and those that do not (the evaluators disagree).

    python bench/eval_throughput.py --store S --baseline-commit SHA [--problems K,K] [--inputs kernelbench]
        [--sample 0.2] [--repeat 1] [--out DIR] [--work DIR] [--kernelbench PATH] [--budget S]

The input store is only read: a copy of it, with the slice's cells and input checks removed (so
that both evaluators do all of the slice's work), is what each run starts from. `--out` gets the
plan, both runs' analyses (JSON), each subprocess's log, the comparison and the table; the store
copies stay in `--work`. Needs a CUDA GPU (`--help` works anywhere). A stored run's split alone
is `kbm runs --run N`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))  # compare_cells and hang_recovery, sibling scripts, whichever way this one is loaded

DEFAULT_PROBLEMS = (
    "level1/19_ReLU",                                   # elementwise on 6.4 GB: compare and checks dominate
    "level1/23_Softmax",                                # a row reduction on the same 6.4 GB input
    "level1/47_Sum_reduction_over_a_dimension",         # a reduction: 8.6 GB in, 2 MB out
    "level1/1_Square_matrix_multiplication_",           # a matmul: launches dominate
    "level1/40_LayerNorm",                              # a norm on 268 MB: cheap mutants
    "level1/42_Max_Pooling_2D",                         # pooling on 2.1 GB
    "level1/89_cumsum",                                 # a scan on 4.3 GB
    "level1/95_CrossEntropyLoss",                       # a loss: one scalar out, per-cell overhead alone
    "level1/72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_",  # 14 MB in
    "level2/6_Conv3d_Softmax_MaxPool_MaxPool",          # a fused conv: 25 MB in, many mutants
)
"""The default slice: ReLU, Softmax, a reduction, a matmul, two small convolutions, a norm, a pool, a scan, a loss."""

EVALUATORS = ("old", "new")
"""The run order within each repetition: the baseline first, then this checkout."""

READ_GIB = 4
"""The size of the tensor whose `sum()` measures the read bandwidth."""

WARM = """
import os, sys
from kbm_toolkit.evaluation.compiling import compile_pool
from kbm_toolkit.evaluation.plan import plan_problem, stored_mutants
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import Store
store_path, kernelbench, arch, sample, *keys = sys.argv[1:]
store, problems = Store(store_path, readonly=True), ProblemSet.discover(kernelbench or None)
jobs = [(problems.get(k), *stored_mutants(store, problems.get(k), float(sample))) for k in keys]
with compile_pool(max(1, (os.cpu_count() or 2) - 1)) as pool:
    for f in [pool.submit(plan_problem, p, s, sh, rows, [], arch, False) for p, s, sh, rows in jobs]:
        f.result()
"""
"""Compiles a slice's substrates and sampled mutants into the NVRTC cache, in an evaluator's own checkout."""
# run before the timed runs, by each checkout: neither run then waits on compiles the other paid for


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
    writers = store.db.execute("select count(*) from cells where run = ? and note like 'wrote over%'",
                               [run_id]).fetchone()[0]
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
            "median_cell_ms": _median(store, run_id), "outcomes": outcomes, "writers": writers, "seconds": split,
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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; `--problems` becomes a list of keys."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, type=Path,
                    help="input store: the slice's problems gated and mutated (only read; copies are run)")
    base = ap.add_mutually_exclusive_group()
    base.add_argument("--baseline", type=Path, help="a checkout of the baseline kbm (today's evaluator)")
    base.add_argument("--baseline-commit", metavar="SHA", help="a commit of this repository to check out as the "
                      "baseline (git worktree add); without either, only this checkout runs")
    ap.add_argument("--worktree", type=Path, help="where --baseline-commit is checked out [/tmp/kbm-old-SHA]")
    ap.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS), type=_keys,
                    help="the slice: problem keys, comma-separated [a KernelBench slice of 10]")
    ap.add_argument("--inputs", default="kernelbench", help="input specs, as for kbm run [kernelbench: the official 5 trials]")
    ap.add_argument("--sample", type=float, default=0.2, help="share of each problem's mutants [0.2]")
    ap.add_argument("--workers", type=int, default=1, help="workers per GPU, as for kbm run [1]")
    ap.add_argument("--repeat", type=int, default=1, help="(baseline, new) pairs to run [1]")
    ap.add_argument("--new-args", metavar="ARGS", help="more `kbm run` options for this checkout's evaluator only, "
                                                       "e.g. '--spares 2'")
    ap.add_argument("--kernelbench", type=Path, help="the KernelBench checkout [$KBM_KERNELBENCH]")
    ap.add_argument("--out", type=Path, default=Path("eval-throughput"),
                    help="where the plan, analyses, logs and table go [./eval-throughput]")
    ap.add_argument("--work", type=Path, help="where the store copies go [a new folder under the temp dir]")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds a run may take before it is stopped (SIGINT: it keeps what it stored) [300]")
    ap.add_argument("--budget", type=float, help="seconds for the whole bench: no run starts that the slowest "
                    "so far would take past it")
    ap.add_argument("--no-warm", action="store_true", help="skip filling the compile cache before the timed runs")
    args = ap.parse_args(argv)
    if not 0 < args.sample <= 1:
        ap.error("--sample is a share in (0, 1]")
    if args.repeat < 1 or args.workers < 1:
        ap.error("--repeat and --workers are at least 1")
    return args


def for_baseline(base: Path, dest: Path, checkout: Path) -> Path:
    """A copy of `base` the baseline checkout opens: the records of migrations it does not define
    are dropped (it refuses a store a newer kbm wrote); their tables and columns, which it never
    reads, stay."""
    schema = checkout / "kbm_toolkit/store/schema.py"
    if not schema.is_file():  # a checkout from before migrations: nothing it could refuse
        return base
    known = re.findall(r"^def (m\d{3}_\w+)\(", schema.read_text(), re.M)
    shutil.copyfile(base, dest)
    db = sqlite3.connect(dest)
    with db:
        db.execute(f"delete from _kbm_migrations where name not in ({','.join('?' * len(known))})", known)
    db.close()
    return dest


def restore_migrations(copy: Path, base: Path) -> None:
    """Give a copy `for_baseline` made back the migration records it dropped (their tables and
    columns are there), so this checkout's kbm opens it without applying them again."""
    db = sqlite3.connect(copy)
    with db:
        db.execute("attach database ? as base", [str(base)])
        db.execute("insert into _kbm_migrations select * from base._kbm_migrations "
                   "where name not in (select name from main._kbm_migrations)")
    db.close()


def _keys(text: str) -> list[str]:
    """Comma-separated problem keys."""
    return [k.strip() for k in text.split(",") if k.strip()]


def prepare_input(source: Path, dest: Path, keys: list[str]) -> dict[str, int]:
    """Copy `source` to `dest` without the cells, input checks and shares of `keys`; `source` is only read."""
    # plain sqlite, not Store: this checkout's kbm would migrate the copy past what the baseline reads
    if not source.is_file():
        raise SystemExit(f"no store at {source}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    src, dst = sqlite3.connect(f"file:{source.resolve()}?mode=ro", uri=True), sqlite3.connect(dest)
    try:
        src.backup(dst)
        marks = ",".join("?" * len(keys))
        known = {r[0] for r in dst.execute(f"select key from problems where key in ({marks})", keys)}
        mutants = dict(dst.execute(f"select problem, count(*) from mutants where problem in ({marks}) group by 1", keys))
        missing = [k for k in keys if k not in known or not mutants.get(k)]
        if missing:
            raise SystemExit(f"{source} has no mutants of {', '.join(missing)}: gate and mutate them first")
        with dst:
            cells = dst.execute(f"delete from cells where mutant in (select id from mutants where problem in ({marks}))",
                                keys).rowcount
            checks = dst.execute(f"delete from input_checks where input in (select id from inputs where problem in "
                                 f"({marks}))", keys).rowcount
            columns = {r[1] for r in dst.execute("pragma table_info(problems)")} & {"sample", "full_rows"}
            if columns:  # unevaluated again: a run records the share it evaluates
                dst.execute(f"update problems set {', '.join(f'{c} = null' for c in sorted(columns))} "
                            f"where key in ({marks})", keys)
        return {"cells_removed": cells, "checks_removed": checks}
    finally:
        src.close()
        dst.close()


def slice_plan(store_path: Path, keys: list[str], source: str, sample: float, kernelbench: Path | None
               ) -> list[dict[str, Any]]:
    """Per problem: its sampled distinct mutants, its inputs from `source`, and the most cells a run writes."""
    from kbm_toolkit.errors import KbmError
    from kbm_toolkit.evaluation.input_sources import resolve
    from kbm_toolkit.evaluation.plan import stored_mutants
    from kbm_toolkit.problems.problem_set import ProblemSet
    from kbm_toolkit.store import Store

    store = Store(store_path, readonly=True)
    try:
        problems = ProblemSet.discover(kernelbench)
        specs_for = resolve(source, {*problems.problems(), *store.problem_rows()})
        plan = []
        for key in keys:
            try:
                problem = problems.get(key)
                _, _, rows = stored_mutants(store, problem, sample)
                specs = specs_for(problem)
            except KbmError as e:
                raise SystemExit(f"{key}: {e.line()}") from None
            distinct = sum(r["status"] == "distinct" for r in rows.values())
            plan.append({"problem": key, "mutants": distinct, "inputs": len(specs), "cells": distinct * (len(specs) + 1)})
        return plan
    finally:
        store.close()


def plan_text(plan: list[dict[str, Any]], sample: float, source: str, removed: dict[str, int]) -> str:
    """The plan as printed before anything runs."""
    lines = [f"slice: {len(plan)} problems, --inputs {source}, --sample {sample:g} (at most: crashers stop early)"]
    lines += [f"  {p['mutants']:4d} mutants x ({p['inputs']} inputs + probe) <= {p['cells']:5d} cells  {p['problem']}"
              for p in plan]
    lines.append(f"  {sum(p['mutants'] for p in plan):4d} mutants, <= {sum(p['cells'] for p in plan)} cells per run; "
                 f"the input copy lacks the slice's {removed['cells_removed']} stored cells and "
                 f"{removed['checks_removed']} input checks")
    return "\n".join(lines)


def read_bandwidth(gib: int = READ_GIB, tries: int = 5) -> float:
    """Bytes per second `x.sum()` reads over a `gib` GiB fp32 tensor on the GPU, best of `tries`."""
    import torch

    x = torch.ones(gib * 2**28, dtype=torch.float32, device="cuda")
    x.sum()  # the first call pays for the kernel's load
    best = float("inf")
    for _ in range(tries):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        x.sum()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1000)
    size = x.numel() * x.element_size()
    del x
    torch.cuda.empty_cache()  # the runs' workers need the memory, not this process
    return size / best


CRASH_TRIES = 2
"""Fresh crashing processes `crash_alone` times; each costs a process start (~5 s), not only its crash."""


def crash_alone(tries: int = CRASH_TRIES) -> float:
    """Seconds from an out-of-bounds store's launch until its error, alone on the GPU (a fresh
    process each try, `bench/hang_recovery.py`'s crash), the quickest of `tries`: a crashed cell
    can cost no less."""
    import torch
    from hang_recovery import crash_latency

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return min(crash_latency(0, 0.0, sms)["error_ms"] for _ in range(tries)) / 1000


def baseline_checkout(args: argparse.Namespace) -> Path | None:
    """`--baseline`, or `--baseline-commit` as a worktree (reused when already there); None without either."""
    if args.baseline:
        path = args.baseline.resolve()
        if not (path / "kbm_toolkit" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {path} is no kbm checkout (it has no kbm_toolkit/)")
        return path
    if not args.baseline_commit:
        return None
    sha = _git(REPO, "rev-parse", "--verify", f"{args.baseline_commit}^{{commit}}")
    path = (args.worktree or Path(tempfile.gettempdir()) / f"kbm-old-{sha[:12]}").resolve()
    if path.exists():
        if not (path / ".git").exists() or _git(path, "rev-parse", "HEAD") != sha:
            raise SystemExit(f"{path} exists and is no worktree at {sha[:12]}: name another with --worktree")
    else:
        _git(REPO, "worktree", "add", "--detach", str(path), sha)
    return path


def _git(where: Path, *command: str) -> str:
    """A git command's output; its error in one line when it fails."""
    done = subprocess.run(["git", "-C", str(where), *command], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"git {' '.join(command)} (in {where}): {_last_line(done.stderr) or done.returncode}")
    return done.stdout.strip()


def _last_line(text: str) -> str:
    """The last non-empty line of a process's output (its error, usually)."""
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def checkout_env(checkout: Path) -> dict[str, str]:
    """The environment a subprocess imports `checkout`'s kbm_toolkit in (what PYTHONPATH had stays after it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def check_import(checkout: Path) -> None:
    """Refuse when a subprocess in `checkout` would import another kbm_toolkit than its own."""
    done = subprocess.run([sys.executable, "-c", "import kbm_toolkit; print(kbm_toolkit.__file__)"], cwd=checkout,
                          env=checkout_env(checkout), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"a subprocess in {checkout} cannot import kbm_toolkit: {_last_line(done.stderr)}")
    found = Path(done.stdout.strip()).resolve()
    if checkout.resolve() not in found.parents:
        raise SystemExit(f"a subprocess in {checkout} imports kbm_toolkit from {found}, not its own")


def warm_cache(checkout: Path, store: Path, keys: list[str], sample: float, kernelbench: Path | None,
               arch: str, log: Path) -> str:
    """Fill the compile cache for the slice with `checkout`'s kbm (`WARM`); what it took, in words."""
    start = time.perf_counter()
    with log.open("w") as f:
        done = subprocess.run([sys.executable, "-c", WARM, str(store), str(kernelbench or ""), arch, str(sample), *keys],
                              cwd=checkout, env=checkout_env(checkout), stdout=f, stderr=subprocess.STDOUT)
    took = time.perf_counter() - start
    return f"{took:.1f} s" if done.returncode == 0 else f"failed after {took:.1f} s (see {log}); the runs compile"


def run_command(store: Path, keys: list[str], args: argparse.Namespace, kernelbench: Path | None,
                evaluator: str = "new") -> list[str]:
    """`kbm run` on `store` for the slice, as each evaluator's subprocess runs it (`--new-args` only
    this checkout's: the baseline may not know them)."""
    command = [sys.executable, "-m", "kbm_toolkit", "--store", str(store)]
    if kernelbench:
        command += ["--kernelbench", str(kernelbench)]
    extra = shlex.split(args.new_args or "") if evaluator == "new" else []
    return command + ["run", *keys, "--inputs", args.inputs, "--sample", f"{args.sample:g}",
                      "--workers", str(args.workers), *extra]


def run_evaluator(checkout: Path, command: list[str], log: Path, timeout: float) -> tuple[float, int]:
    """Run `command` in `checkout`, output to `log`, SIGINT after `timeout` s; (seconds, exit status)."""
    # cwd and PYTHONPATH both the checkout: `python -m` puts the cwd first on sys.path
    start = time.perf_counter()
    with log.open("w") as f:
        f.write(" ".join(command) + f"\n(in {checkout})\n")
        f.flush()
        # its own process group: a stop reaches its workers and compile pool, and nothing else
        proc = subprocess.Popen(command, cwd=checkout, env=checkout_env(checkout), stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                rc = proc.wait(30)  # kbm dumps its threads 15 s into a stop that hangs
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
    return time.perf_counter() - start, rc


def run_row(store_path: Path, after: int, evaluator: str, rep: int, process_s: float, rc: int) -> dict[str, Any]:
    """What one evaluator's run on its copy stored: `analyse`, plus its measured parts and bytes."""
    from kbm_toolkit.store import Store

    row: dict[str, Any] = {"evaluator": evaluator, "rep": rep, "process_s": round(process_s, 1), "exit": rc,
                           "store": str(store_path)}
    store = Store(store_path, readonly=True)
    try:
        found = store.db.execute("select max(id) from runs where kind = 'evaluate' and id > ?", [after]).fetchone()[0]
        if found is None:
            return {**row, "error": "no evaluate run stored (see its log)"}
        env, stats, ended = store.db.execute("select environment, stats, coalesce(finished, stopped) from runs "
                                             "where id = ?", [found]).fetchone()
        if not ended:
            return {**row, "run": found, "error": "the run was killed before it stored its end"}
        stats = json.loads(stats or "{}")
        seconds = stats.get("seconds") or {}
        workers = json.loads(env or "{}").get("workers") or 1
        # the run's own monotonic clock; the stored dates have whole seconds
        wall = seconds["wall"] / workers if seconds.get("wall") else None
        row.update(analyse(store, found, wall, workers))
        finished = store.db.execute("select finished from runs where id = ?", [found]).fetchone()[0]
        row.update(stopped=not finished, compared_bytes=stats.get("compared_bytes"), restarts=stats.get("restarts"),
                   problems=stats.get("problems"))
        return row
    finally:
        store.close()


def with_floors(rows: list[dict[str, Any]], bandwidth: float | None,
                crash_alone_s: float | None = None) -> list[dict[str, Any]]:
    """Each run with its comparing and checking seconds, their floors (bytes read / `bandwidth`) and
    the ratios; and, given a crash's error latency alone on this GPU (`crash_alone_s`), the share
    outside launches the run would have at its floor (`outside_floor`)."""
    # the baseline stores no bytes: it borrows the new run's of its repetition (same cells, same outputs)
    new_bytes = {r["rep"]: r["compared_bytes"] for r in rows if r["evaluator"] == "new" and r.get("compared_bytes")}
    out = []
    for r in rows:
        r = dict(r)
        seconds = r.get("seconds") or {}
        r["compare_s"] = seconds.get("comparing")
        r["share_not_launches"] = (round(1 - seconds.get("launches", 0.0) / seconds["wall"], 4)
                                   if seconds.get("wall") else None)
        # a crashed launch is the mutant's own GPU time (the kernel until its error): the same share
        # with it counted as a launch says what the evaluator itself costs beside the crashes
        r["share_not_any_launch"] = (round(1 - (seconds.get("launches", 0.0) + seconds.get("crashed", 0.0))
                                           / seconds["wall"], 4) if seconds.get("wall") else None)
        r["share_crash_path"] = (round(sum(seconds.get(part, 0.0) for part in CRASH_PATH) / seconds["wall"], 4)
                                 if seconds.get("wall") else None)
        r["share_rest"] = (round(r["share_not_launches"] - r["share_crash_path"], 4)
                           if r["share_crash_path"] is not None else None)
        r["crashed_cells"] = (sum(r["outcomes"].get(o, 0) for o in ("crash", "timeout"))
                              if r.get("outcomes") else None)
        r["crashed_s_per_cell"] = (round(seconds["crashed"] / r["crashed_cells"], 3)
                                   if r["crashed_cells"] and "crashed" in seconds else None)
        if r["evaluator"] != "new" and not r.get("compared_bytes") and "error" not in r:
            borrowed = new_bytes.get(r["rep"]) or next(iter(new_bytes.values()), None)
            if borrowed:
                r.update(compared_bytes=borrowed, bytes_borrowed=True)
        if bandwidth and r.get("compared_bytes") and r["compare_s"] is not None:
            r["floor_s"] = round(r["compared_bytes"] / bandwidth, 3)
            r["compare_over_floor"] = round(r["compare_s"] / r["floor_s"], 2) if r["floor_s"] else None
            # the comparison kernels' own GPU time (an evaluator since 2026-12-03 stores it): what of
            # `comparing` is reading, and what is queueing and the share of the one wait it is charged
            gpu = sum(p.get("compare_gpu_s", 0.0) for p in (r.get("problems") or {}).values())
            if gpu and r["floor_s"]:
                r["compare_gpu_s"] = round(gpu, 3)
                r["gpu_compare_over_floor"] = round(gpu / r["floor_s"], 2)
        r.update(large_comparisons(r.get("problems"), bandwidth))
        r.update(check_floor(r, bandwidth))
        r.update(outside_floor(r, crash_alone_s))
        out.append(r)
    return out


def check_floor(row: dict[str, Any], bandwidth: float | None) -> dict[str, Any]:
    """The overwrite checks' seconds against their floor: every watched storage read once per cell
    (`checked_bytes`, stored per problem by an evaluator since 2026-12-06) at `bandwidth`."""
    problems = (row.get("problems") or {}).values()
    checked = sum(p.get("checked_bytes", 0) for p in problems)
    if not bandwidth or not checked:
        return {}
    floor = checked / bandwidth
    found = {"checked_bytes": checked, "check_floor_s": round(floor, 3),
             "check_over_floor": round((row.get("seconds") or {}).get("checking", 0.0) / floor, 2)}
    gpu = sum(p.get("check_gpu_s", 0.0) for p in problems)
    if gpu:
        found["gpu_check_over_floor"] = round(gpu / floor, 2)
    return found


def outside_floor(row: dict[str, Any], crash_alone_s: float | None) -> dict[str, Any]:
    """The share outside launches with every part at its floor: comparing and checking at one read
    of each tensor they read (the reference in both), each crashed cell at a crash's error latency
    alone, nothing else (no spares, planning, building); its launches as the run measured them.
    What no evaluator that compares and checks apart could go below on this slice, on this GPU
    (one that hashed the reference while comparing it would save that read)."""
    seconds = row.get("seconds") or {}
    if crash_alone_s is None or row.get("crashed_cells") is None or "floor_s" not in row \
            or "check_floor_s" not in row or row.get("bytes_borrowed"):
        return {}
    unavoidable = row["floor_s"] + row["check_floor_s"] + row["crashed_cells"] * crash_alone_s
    return {"outside_floor": round(unavoidable / (seconds.get("launches", 0.0) + unavoidable), 4)}


CRASH_PATH = ("crashed", "spares", "building ahead", "handover", "rebuilding")
"""The parts of worker time a crashed launch costs: the launch until its error, waiting for a warm
spare, the spare finishing the input it takes over on, the pipe, and inputs built again after a restart."""

LARGE = 1e9
"""Bytes one comparison reads (output and reference) from which it counts as large: the issue's
compare goal is on the pool's largest outputs, where a comparison is bandwidth, not per-call latency."""


def large_comparisons(problems: dict[str, dict[str, float]] | None, bandwidth: float | None) -> dict[str, Any]:
    """Compare/floor over the problems whose comparisons read at least `LARGE` bytes each on
    average (a run's split per problem with `compares`), and which problems those are."""
    large = {k: p for k, p in (problems or {}).items()
             if p.get("compares") and p.get("compared_bytes", 0) / p["compares"] >= LARGE}
    compared = sum(p["compared_bytes"] for p in large.values())
    if not bandwidth or not compared:
        return {}
    gpu = sum(p.get("compare_gpu_s", 0.0) for p in large.values())
    return {"large_problems": sorted(large),
            "large_compare_over_floor": round(sum(p.get("comparing", 0.0) for p in large.values())
                                              / (compared / bandwidth), 2),
            **({"large_gpu_compare_over_floor": round(gpu / (compared / bandwidth), 2)} if gpu else {})}


def part_order(rows: list[dict[str, Any]]) -> list[str]:
    """The split's parts in `TIME_SPLIT` order, parts beyond it after `comparing`, and `other` last."""
    from kbm_toolkit.analysis.runs import TIME_SPLIT

    stored = {k for r in rows for k in (r.get("seconds") or {}) if k != "wall"}
    order = [k for k in TIME_SPLIT if k in stored or k == "launches"]
    extra = sorted(stored - set(order) - {"other"})
    at = order.index("comparing") + 1 if "comparing" in order else len(order)
    return order[:at] + extra + order[at:] + ["other"]


def table(rows: list[dict[str, Any]]) -> str:
    """One column per run; cells, walls, cells/s, each part's share, the share outside launches, compare/floor."""
    def fmt(value: Any, spec: str, mark: str = "") -> str:
        return "-" if value is None else format(value, spec) + mark

    def share(r: dict[str, Any], part: str) -> str:
        seconds = r.get("seconds") or {}
        return fmt(seconds[part] / seconds["wall"] if part in seconds and seconds.get("wall") else None, ".1%")

    def started(r: dict[str, Any], key: str, spec: str) -> str:  # how the run's children started (`spare_stats`)
        return fmt((r.get("spares") or {}).get(key), spec)

    lines: list[tuple[str, list[str]]] = [
        ("run", [str(r.get("run", "-")) for r in rows]),
        ("cells", [fmt(r.get("cells"), "d") for r in rows]),
        ("wall s (run)", [fmt(r.get("wall_s"), ".1f") for r in rows]),
        ("wall s (process)", [fmt(r.get("process_s"), ".1f") for r in rows]),
        ("cells/s", [fmt(r.get("cells_per_s"), ".1f") for r in rows]),
        ("exit status", [fmt(r.get("exit"), "d") for r in rows]),
        ("restarts", [fmt(r.get("restarts"), "d") for r in rows]),
        ("  crashed or hung cells", [fmt(r.get("crashed_cells"), "d") for r in rows]),
        ("  crashed s per crashed cell", [fmt(r.get("crashed_s_per_cell"), ".2f") for r in rows]),
        ("  cells that wrote over inputs", [fmt(r.get("writers"), "d") for r in rows]),
        ("children started", [started(r, "starts", "d") for r in rows]),
        ("  warm when needed", [started(r, "found_warm", "d") for r in rows]),
        ("  lent by a sibling worker", [started(r, "borrowed", "d") for r in rows]),
        ("  spawn to warm, median s", [started(r, "warm_s_median", ".2f") for r in rows]),
        ("worker s", [fmt((r.get("seconds") or {}).get("wall"), ".1f") for r in rows]),
    ]
    lines += [(f"  {part}", [share(r, part) for r in rows]) for part in part_order(rows)]
    lines += [
        ("not launches (goal <= 15%)", [fmt(r.get("share_not_launches"), ".1%") for r in rows]),
        ("  the crash path", [fmt(r.get("share_crash_path"), ".1%") for r in rows]),
        ("  the rest", [fmt(r.get("share_rest"), ".1%") for r in rows]),
        ("not launches, crashed ones aside", [fmt(r.get("share_not_any_launch"), ".1%") for r in rows]),
        ("compare s", [fmt(r.get("compare_s"), ".2f", "*" if r.get("bytes_borrowed") else "") for r in rows]),
        ("GB compared", [fmt(r["compared_bytes"] / 1e9 if r.get("compared_bytes") else None, ".1f",
                             "*" if r.get("bytes_borrowed") else "") for r in rows]),
        ("floor s", [fmt(r.get("floor_s"), ".2f", "*" if r.get("bytes_borrowed") else "") for r in rows]),
        ("compare / floor (goal <= 1.3)", [fmt(r.get("compare_over_floor"), ".2f",
                                               "*" if r.get("bytes_borrowed") else "") for r in rows]),
        ("  comparisons >= 1 GB", [fmt(r.get("large_compare_over_floor"), ".2f") for r in rows]),
        ("its kernels' GPU time / floor", [fmt(r.get("gpu_compare_over_floor"), ".2f") for r in rows]),
        ("  comparisons >= 1 GB", [fmt(r.get("large_gpu_compare_over_floor"), ".2f") for r in rows]),
        ("GB checked", [fmt(r["checked_bytes"] / 1e9 if r.get("checked_bytes") else None, ".1f") for r in rows]),
        ("check / floor", [fmt(r.get("check_over_floor"), ".2f") for r in rows]),
        ("check kernels' GPU time / floor", [fmt(r.get("gpu_check_over_floor"), ".2f") for r in rows]),
        ("not launches, every part at its floor", [fmt(r.get("outside_floor"), ".1%") for r in rows]),
    ]
    heads = [f"{r['evaluator']} #{r['rep'] + 1}" + (" stopped" if r.get("stopped") else "") for r in rows]
    width = max(len(name) for name, _ in lines)
    cols = [max(len(h), *(len(v[i]) for _, v in lines)) for i, h in enumerate(heads)]
    text = [" " * width + "".join(f"  {h:>{c}}" for h, c in zip(heads, cols))]
    text += [f"{name:<{width}}" + "".join(f"  {v:>{c}}" for v, c in zip(values, cols)) for name, values in lines]
    notes = [f"{r['evaluator']} #{r['rep'] + 1}: {r['error']}" for r in rows if r.get("error")]
    if any(r.get("bytes_borrowed") for r in rows):
        notes.append("* the baseline stores no bytes compared: these are the new run's (same cells, same outputs); "
                     "its comparing also holds the overwrite checks and their clones, which the new run times "
                     "apart as `checking`")
    return "\n".join(text + notes)


def problem_table(row: dict[str, Any], bandwidth: float | None) -> str:
    """One run's split per problem (what a run since 2026-12-02 stores): seconds in launches, crashed
    launches (with how many, seconds each and the slowest), comparing and checking, and comparing
    against its floor, slowest comparing first."""
    from kbm_toolkit.analysis.runs import seconds_per_crash

    problems = row.get("problems") or {}
    if not problems:
        return f"{row['evaluator']} #{row['rep'] + 1}: no split per problem stored"
    lines = [f"{row['evaluator']} #{row['rep'] + 1}, per problem (s)   launches  crashed  crashes  s/crash  "
             "slowest  comparing  checking  GB compared  compare/floor  GPU/floor"]
    for key, parts in sorted(problems.items(), key=lambda kv: -kv[1].get("comparing", 0.0)):
        compared = parts.get("compared_bytes", 0)
        floor = compared / bandwidth if bandwidth and compared else None
        ratio = f"{parts.get('comparing', 0.0) / floor:.2f}" if floor else "-"
        gpu = f"{parts['compare_gpu_s'] / floor:.2f}" if floor and parts.get("compare_gpu_s") else "-"
        # a crash's launch-to-error against its problem's launches: a fixed fault cost, or kernels
        # that run long out of bounds before they fault (runs before 2026-12-05 stored no count)
        crashes, each = parts.get("crashes"), seconds_per_crash(parts)
        each = "-" if each is None else f"{each:.2f}"
        slowest = f"{parts['crash_s_max']:.2f}" if parts.get("crash_s_max") else "-"
        lines.append(f"  {key[:36]:<36} {parts.get('launches', 0.0):8.2f} {parts.get('crashed', 0.0):8.2f} "
                     f"{crashes if crashes is not None else '-':>8} {each:>8} {slowest:>8} "
                     f"{parts.get('comparing', 0.0):10.2f} {parts.get('checking', 0.0):9.2f} {compared / 1e9:12.1f} "
                     f"{ratio:>14} {gpu:>10}")
    return "\n".join(lines)


def verdict_lines(rows: list[dict[str, Any]], comparisons: list[dict[str, Any]], bandwidth: float | None,
                  selves: dict[str, dict[str, Any]] | None = None, crash_alone_s: float | None = None) -> list[str]:
    """The last lines: the bandwidth, the goals (medians over repetitions), the floor of the share
    outside launches, the cell comparison and, with each evaluator run twice (`selves`), which of
    the differing cells differ run to run."""
    def median(evaluator: str, key: str) -> float | None:
        values = [r[key] for r in rows if r["evaluator"] == evaluator and r.get(key) is not None]
        return statistics.median(values) if values else None

    old, new = median("old", "cells_per_s"), median("new", "cells_per_s")
    ratio, floor, outside = (new / old if old and new else None), median("new", "compare_over_floor"), \
        median("new", "share_not_launches")
    lines = [f"read bandwidth: {bandwidth / 1e9:.0f} GB/s (x.sum() over {READ_GIB} GiB fp32, best of 5)"
             if bandwidth else "read bandwidth: not measured"]
    lines.append(f"new/old cells/s: {ratio:.2f}x ({new:.1f} / {old:.1f}; goal >= 1.5x)" if ratio
                 else "new/old cells/s: - (a run is missing)")
    lines.append(f"new compare / floor: {floor:.2f} (goal <= 1.3)" if floor is not None
                 else "new compare / floor: - (no bytes compared stored)")
    large = median("new", "large_compare_over_floor")
    if large is not None:  # item 1's measure: the largest outputs, where comparing is reading
        names = next(r["large_problems"] for r in rows if r["evaluator"] == "new" and r.get("large_problems"))
        lines.append(f"new compare / floor on comparisons of >= {LARGE / 1e9:g} GB: {large:.2f} (goal <= 1.3; "
                     f"{', '.join(n.split('/')[-1] for n in names)})")
    gpu = median("new", "gpu_compare_over_floor")
    if gpu is not None:
        lines.append(f"new comparison kernels' GPU time / floor: {gpu:.2f} (the rest of comparing is host "
                     "queueing and its share of the one wait for the GPU)")
    aside, crash, rest = (median("new", key) for key in ("share_not_any_launch", "share_crash_path", "share_rest"))
    split = (f": the crash path ({', '.join(CRASH_PATH)}) {crash:.1%}, the rest {rest:.1%}"
             if crash is not None and rest is not None else "")
    lines.append(f"new share outside launches: {outside:.1%} (goal <= 15%){split}; {aside:.1%} with crashed "
                 "launches counted as launches" if outside is not None and aside is not None
                 else "new share outside launches: -")
    least = median("new", "outside_floor")
    if least is not None and crash_alone_s is not None:
        crashes = median("new", "crashed_cells")
        lines.append(f"new share outside launches at its floor: {least:.1%} (comparing and checking at one read "
                     f"of each tensor they read, {crashes:g} crashed cells at {crash_alone_s * 1000:.0f} ms each, a crash's "
                     "error latency alone on this GPU, and nothing else)")
    lines += [cells_line(c, i) for i, c in enumerate(comparisons)]
    if comparisons and "old_suspects" in comparisons[0]:
        lines.append(suspects_line(comparisons[0]))
    if comparisons and selves:
        lines.append(stability_line(comparisons[0], selves))
    return lines


def self_comparisons(runs: dict[str, list[Path]], keys: list[str]) -> dict[str, dict[str, Any]]:
    """Each evaluator's first two runs' cells against each other (`--repeat 2`): what differs there
    is the mutants' own doing (races, reads of memory they do not own), not the evaluator's."""
    from compare_cells import compare_cells

    return {name: compare_cells(paths[0], paths[1], keys, rel=1e-6) for name, paths in runs.items() if len(paths) >= 2}


def unstable_cells(result: dict[str, Any]) -> set[tuple[str, str]]:
    """The (mutant, input) cells a comparison finds different or in one store only."""
    return ({(d["mutant"], d["input"]) for d in result["differing"]}
            | {tuple(c) for c in result["only_first"]} | {tuple(c) for c in result["only_second"]})


def stability_line(result: dict[str, Any], selves: dict[str, dict[str, Any]]) -> str:
    """Old against new's differing cells, split: those that also differ between two runs of one
    evaluator (the mutant's nondeterminism, named by rule) and those stable in both (the evaluators
    disagree: named by rule and problem)."""
    unstable = set().union(*(unstable_cells(r) for r in selves.values()))
    differ = result["differing"]
    moving = [d for d in differ if (d["mutant"], d["input"]) in unstable]
    stable = [d for d in differ if (d["mutant"], d["input"]) not in unstable]
    runs = " and ".join(f"{name} #1 vs #2: {len(unstable_cells(r))} cells" for name, r in selves.items())
    return (f"of the {len(differ)} cells old and new differ in, {len(moving)} also differ between two runs of one "
            f"evaluator ({runs}; the mutant's own nondeterminism: {by_rule(moving)}); {len(stable)} are the same "
            f"run to run ({sum(d['outcome_differs'] for d in stable)} in outcome: {by_rule(stable, by_problem=True)})")


def by_rule(cells: list[dict[str, Any]], by_problem: bool = False, top: int = 12) -> str:
    """Differing cells counted by rule (or rule and problem), most first: `rule 3, other 1` ("none" for none)."""
    count = Counter((d["rule"], d["problem"]) if by_problem else d["rule"] for d in cells)
    return ", ".join(f"{' in '.join(k) if by_problem else k} {n}" for k, n in count.most_common(top)) or "none"


def restored_after(path: Path) -> set[tuple[str, str]]:
    """The (mutant, input) cells a store's evaluator measured after a mutant wrote over an input
    and it restored that input from copies the write could reach (`Store.overwrite_suspects`: the
    old evaluator's way, before checksums)."""
    from kbm_toolkit.store import Store

    store = Store(path)
    try:
        return {(m, i) for i, mutants in store.overwrite_suspects().items() for m in mutants}
    finally:
        store.close()


def suspects_line(result: dict[str, Any]) -> str:
    """Old against new's differing cells, split: those the old evaluator measured after a write it
    restored from reachable copies (its inputs or reference may not have been its spec's), and the rest."""
    suspects = {tuple(c) for c in result.get("old_suspects", ())}
    differ = result["differing"]
    after = [d for d in differ if (d["mutant"], d["input"]) in suspects]
    rest = [d for d in differ if (d["mutant"], d["input"]) not in suspects]
    return (f"of the {len(differ)} cells old and new differ in, {len(after)} were measured by the old evaluator after "
            f"a write it restored from copies the write could reach ({len(suspects)} such cells in its run); the other "
            f"{len(rest)} by rule: {by_rule(rest, top=15)}")


def cells_line(result: dict[str, Any], rep: int) -> str:
    """One repetition's cell comparison, old against new, naming the mutants that differ."""
    from compare_cells import differing_mutants  # imported late, as kbm is: --help needs neither

    left, right = result["cells"]
    differ = result["differing"]
    line = (f"cells old vs new (#{rep + 1}): {left} and {right}; {result['equal']} equal in outcome and margin "
            f"(relative {result['rel']:g}), {len(differ)} differ ({sum(d['outcome_differs'] for d in differ)} in "
            f"outcome), {len(result['only_first'])} only old, {len(result['only_second'])} only new")
    named = differing_mutants(result)
    if named:
        shown = ", ".join(f"{m['mutant']} {m['name']} ({m['problem']}, {m['cells']})" for m in named[:12])
        line += f"; differing mutants: {shown}" + (f" and {len(named) - 12} more" if len(named) > 12 else "")
    return line


def _cuda_or_exit() -> str:
    """The device's `sm_XY`; exits in one line when no CUDA device is visible."""
    try:
        import torch
    except ImportError:
        raise SystemExit("bench/eval_throughput.py needs a CUDA GPU and PyTorch; neither is here") from None
    if not torch.cuda.is_available():
        raise SystemExit("bench/eval_throughput.py needs a CUDA GPU: it times kbm run's evaluators; none is visible")
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def _dump(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, default=str))


def main(argv: list[str] | None = None) -> None:
    """Plan, measure the bandwidth, warm the compile cache, run both evaluators alternately, print the table."""
    args = parse_args(argv)
    arch = _cuda_or_exit()
    began = time.perf_counter()
    keys = args.problems
    kernelbench = args.kernelbench or (Path(os.environ["KBM_KERNELBENCH"]) if os.environ.get("KBM_KERNELBENCH") else None)
    kernelbench = kernelbench.resolve() if kernelbench else None  # the subprocesses run in other folders
    out, work = args.out.resolve(), (args.work or Path(tempfile.mkdtemp(prefix="kbm-eval-throughput-"))).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    old = baseline_checkout(args)
    checkouts = {"old": old, "new": REPO} if old else {"new": REPO}
    for checkout in checkouts.values():
        check_import(checkout)
    base = work / "input.db"
    removed = prepare_input(args.store.resolve(), base, keys)
    bases = {name: base for name in checkouts}
    if old:
        bases["old"] = for_baseline(base, work / "input-old.db", old)
    plan = slice_plan(base, keys, args.inputs, args.sample, kernelbench)
    print(plan_text(plan, args.sample, args.inputs, removed))
    print(f"evaluators: {', '.join(f'{k} {v}' for k, v in checkouts.items())}; store copies in {work}", flush=True)
    _dump(out / "plan.json", {"problems": plan, **removed, "sample": args.sample, "inputs": args.inputs,
                              "checkouts": {k: str(v) for k, v in checkouts.items()}, "work": str(work)})
    bandwidth = read_bandwidth()
    print(f"read bandwidth: {bandwidth / 1e9:.0f} GB/s", flush=True)
    try:
        crash_alone_s: float | None = crash_alone()
        print(f"a crash's error latency alone: {crash_alone_s * 1000:.0f} ms", flush=True)
    except (RuntimeError, OSError, ValueError) as e:  # the floor is one line of the table: the runs go on
        crash_alone_s = None
        print(f"a crash's error latency alone: not measured ({e}); the table gives no floor", flush=True)
    if not args.no_warm:
        for name, checkout in checkouts.items():
            took = warm_cache(checkout, bases[name], keys, args.sample, kernelbench, arch,
                              out / "logs" / f"warm-{name}.log")
            print(f"compile cache filled by {name}: {took}", flush=True)
    db = sqlite3.connect(base)
    after = db.execute("select coalesce(max(id), 0) from runs").fetchone()[0]  # each copy's run comes after
    db.close()
    rows: list[dict[str, Any]] = []
    comparisons: list[dict[str, Any]] = []
    runs: dict[str, list[Path]] = {}  # each evaluator's store copies, by repetition
    longest, stop = 0.0, False
    for rep in range(args.repeat):
        copies: dict[str, Path] = {}
        for name in (e for e in EVALUATORS if e in checkouts):
            if args.budget and time.perf_counter() - began + longest > args.budget:
                print(f"--budget {args.budget:g} s: {name} #{rep + 1} and later runs not started")
                stop = True
                break
            copies[name] = work / f"r{rep + 1}-{name}.db"
            shutil.copyfile(bases[name], copies[name])
            command = run_command(copies[name], keys, args, kernelbench, name)
            process_s, rc = run_evaluator(checkouts[name], command, out / "logs" / f"r{rep + 1}-{name}.log", args.timeout)
            longest = max(longest, process_s)
            if bases[name] != base:  # this checkout reads the baseline's copy: the records go back
                restore_migrations(copies[name], base)
            rows.append(run_row(copies[name], after, name, rep, process_s, rc))
            runs.setdefault(name, []).append(copies[name])
            print(f"{name} #{rep + 1}: {rows[-1].get('cells', 0)} cells, {rows[-1].get('cells_per_s', '-')} cells/s, "
                  f"process {process_s:.0f} s, exit {rc}", flush=True)
            _dump(out / "runs.json", {"bandwidth": bandwidth, "runs": rows})
        if len(copies) == 2:  # both ran this repetition: their cells must agree
            from compare_cells import compare_cells

            comparisons.append({**compare_cells(copies["old"], copies["new"], keys, rel=1e-6),
                                "old_suspects": sorted(restored_after(copies["old"]))})
            _dump(out / "compare.json", comparisons)
        if stop:
            break
    selves = self_comparisons(runs, keys)
    if selves:
        _dump(out / "self-compare.json", selves)
    rows = with_floors(rows, bandwidth, crash_alone_s)
    _dump(out / "runs.json", {"bandwidth": bandwidth, "crash_alone_s": crash_alone_s, "runs": rows})
    per_problem = "\n\n".join(problem_table(r, bandwidth) for r in rows if r["evaluator"] == "new" and "error" not in r)
    (out / "problems.txt").write_text(per_problem + "\n")
    print(per_problem, flush=True)  # before the table, so that the table's verdict lines come last
    text = table(rows) + "\n" + "\n".join(verdict_lines(rows, comparisons, bandwidth, selves, crash_alone_s))
    (out / "table.txt").write_text(text + "\n")
    print(text)
    print(f"everything is in {out}" + (f"; the baseline worktree stays at {old} (git worktree remove {old})"
                                       if args.baseline_commit else ""))


if __name__ == "__main__":
    main()
