"""How soon `kbm run`'s compile pool hands the GPU workers their first plans, from an empty cache:
problems planned whole, one process each (kbm before 2026-12-05), against problems planned in
parts of `PLAN_PART` mutants spread over the pool (`evaluation.plan.plans_ahead`).

    python bench/plan_latency.py --kernelbench PATH [--store @kernelbench] [--level level2]
        [--problems 12] [--workers N] [--consumers 3] [--repeat 1]

The first `--problems` problems the store has mutants of, in the order a run takes them, each
with every stored mutant at its current substrate, are planned by kbm's own compile pool
(`compile_pool`, niced, `--workers` processes) with each variant, each from an empty compile
cache, alternating `--repeat` times.
A run's workers ask for their first problem at once: the seconds until the first `--consumers`
plans are ready are what they wait. Printed per variant: when the first plan, the first
`--consumers` plans and all of them were ready; the last line is the ratio, whole over parts, of
the wait for the first `--consumers` plans (the figure a run's start pays on the GPU) and of the
total. No GPU needed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from kbm_toolkit.cuda.nvrtc import nvrtc_version
from kbm_toolkit.evaluation.compiling import compile_pool
from kbm_toolkit.evaluation.plan import PLAN_PART, Job, plans_ahead, stored_mutants
from kbm_toolkit.evaluation.shard import run_order
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store.shipped import open_store


def _ready_times(jobs: list[Job], workers: int, part: int | None, arch: str) -> list[float]:
    """Seconds from the pool's start until each job's plan was handed on, from an empty cache."""
    previous = os.environ.get("KBM_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["KBM_CACHE"] = cache  # the pool's processes inherit it when they spawn
        pool = compile_pool(workers)
        try:
            start, ready = time.perf_counter(), []
            for _, plan in plans_ahead(pool, jobs, 2 * workers, (arch, True, load_rules(), None), size=part):
                if isinstance(plan, Exception):
                    raise plan
                ready.append(time.perf_counter() - start)
            return ready
        finally:
            pool.shutdown()
            if previous is None:
                os.environ.pop("KBM_CACHE", None)
            else:
                os.environ["KBM_CACHE"] = previous


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", default=None, help="a KernelBench checkout (its problems' substrates)")
    parser.add_argument("--store", default="@kernelbench", help="the store whose mutants are planned")
    parser.add_argument("--level", default=None)
    parser.add_argument("--problems", type=int, default=12)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--consumers", type=int, default=3, help="GPU workers asking for a plan at the start")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()

    store = open_store(args.store)
    held = {r["problem"] for r in store.db.query("select distinct problem from mutants")}
    chosen = sorted((p for p in ProblemSet.discover(args.kernelbench).with_substrates(level=args.level)
                     if p.key in held), key=lambda p: run_order(p.key))[:args.problems]
    jobs = [Job(p, *stored_mutants(store, p), []) for p in chosen]
    mutants = sum(len(j.mutants) for j in jobs)
    each = ", ".join(f"{j.problem.key.split('_')[0]} {len(j.mutants)}" for j in jobs)
    print(f"NVRTC {nvrtc_version()}, {args.arch}, {args.workers} compile processes; {len(jobs)} problems, "
          f"{mutants:,} mutants ({each})")
    variants = {"whole": None, f"parts of {PLAN_PART}": PLAN_PART}
    times: dict[str, list[list[float]]] = {name: [] for name in variants}
    for i in range(args.repeat):
        for name in (list(variants) if i % 2 == 0 else list(reversed(variants))):
            times[name].append(_ready_times(jobs, args.workers, variants[name], args.arch))
    k = min(args.consumers, len(jobs))
    summary = {}
    for name, runs in times.items():
        first = statistics.median(r[0] for r in runs)
        first_k = statistics.median(r[k - 1] for r in runs)
        total = statistics.median(r[-1] for r in runs)
        summary[name] = (first_k, total)
        print(f"{name:<12} first plan {first:6.1f} s, first {k} {first_k:6.1f} s, all {total:6.1f} s")
    (whole_k, whole_all), (parts_k, parts_all) = summary.values()
    print(f"ratio, whole / parts: first {k} plans {whole_k:.1f} s / {parts_k:.1f} s = {whole_k / parts_k:.2f}x; "
          f"all {whole_all:.1f} s / {parts_all:.1f} s = {whole_all / parts_all:.2f}x")


if __name__ == "__main__":
    main()
