"""NVRTC compile throughput: kbm's pooled compiles against the same sources compiled one by one.

    python bench/compile_throughput.py --mutants [--level demo] [--limit 2000]
    python bench/compile_throughput.py [--level demo] [--repeat 3] [--arch sm_90] [--kernelbench PATH]

`--mutants`: every distinct mutant source of the selected substrates (all rules), compiled from an
empty cache by kbm's screening (`mutation.screening.screen`, one call per substrate with one
process per core, as `kbm mutate` runs it), and the same sources one by one in this process
(`compile_source`, no cache). Amortised ms per mutant = wall time / mutants, the figure a user
waits for.

Substrates (the default): each substrate's median compile on one core over `--repeat` runs, one by
one in this process, then the same compiles spread over one process per core.

Either way the last line is the ratio of the two wall times measured in this call, one by one
over pooled: how many times faster the pool compiles. No GPU needed. `--json FILE` writes the
raw timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kbm_toolkit.cuda.nvrtc import compile_source, nvrtc_version
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.mutation.screening import screen
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import has_substrate, substrate_for


def _compile_ms(args: tuple[str, str]) -> float:
    source, arch = args
    start = time.perf_counter()
    try:
        compile_source(source, arch, use_cache=False)
    except Exception:  # a mutant that does not compile still costs its compile time
        pass
    return (time.perf_counter() - start) * 1000


def _one_by_one(jobs: list[tuple[str, str]]) -> float:
    """Wall seconds to compile `jobs` one after another in this process, with no cache."""
    start = time.perf_counter()
    for job in jobs:
        _compile_ms(job)
    return time.perf_counter() - start


def _parallel(jobs: list[tuple[str, str]], workers: int) -> float:
    """Wall seconds to compile `jobs` with `workers` warm processes."""
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_compile_ms, jobs[:workers]))  # start and warm every worker first
        start = time.perf_counter()
        list(pool.map(_compile_ms, jobs, chunksize=4))
        return time.perf_counter() - start


def _screened(substrates: dict, rules: list, arch: str, workers: int, limit: int) -> tuple[list[str], float]:
    """kbm's screening of every substrate's mutants from an empty cache: (the distinct sources, wall seconds)."""
    per_substrate = []
    for s in substrates.values():
        mutants = [m for m in generate(s, rules) if m.target == "kernel" and m.kernel_source != s.source]
        per_substrate.append((s, mutants))
    if limit:  # the first `limit` distinct sources, whole substrates at a time
        kept, seen = [], set()
        for s, mutants in per_substrate:
            if len(seen) >= limit:
                break
            kept.append((s, mutants))
            seen |= {m.kernel_source for m in mutants}
        per_substrate = kept
    sources = sorted({m.kernel_source for _, mutants in per_substrate for m in mutants})
    previous = os.environ.get("KBM_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["KBM_CACHE"] = cache  # nothing cached: every source is compiled
        try:
            start = time.perf_counter()
            for s, mutants in per_substrate:
                screen(mutants, s.source, s.launcher_source, arch, workers=workers)
            wall = time.perf_counter() - start
        finally:
            if previous is None:
                os.environ.pop("KBM_CACHE", None)
            else:
                os.environ["KBM_CACHE"] = previous
    return sources, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", default=None, help="only this level (default: every substrate)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--kernelbench", default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--mutants", action="store_true", help="time mutants instead of substrates")
    parser.add_argument("--limit", type=int, default=0, help="about this many mutant sources (0: all)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    problems = [p for p in ProblemSet.discover(args.kernelbench).select(level=args.level) if has_substrate(p)]
    substrates = {p.key: substrate_for(p) for p in problems}
    _compile_ms((next(iter(substrates.values())).source, args.arch))  # load NVRTC before timing
    header = f"NVRTC {nvrtc_version()}, {args.arch}, {args.workers} processes"

    if args.mutants:
        sources, pooled = _screened(substrates, load_rules(), args.arch, args.workers, args.limit)
        serial = _one_by_one([(s, args.arch) for s in sources])
        result = {"mutants": len(sources), "pooled_s": pooled, "one_by_one_s": serial,
                  "amortised_ms": pooled * 1000 / len(sources), "one_by_one_ms": serial * 1000 / len(sources)}
        print(f"{header}: {len(sources)} distinct mutant sources from {len(substrates)} substrates")
        print(f"kbm's screening: {pooled:.1f} s, {result['amortised_ms']:.1f} ms per mutant amortised")
        print(f"one by one in one process: {serial:.1f} s, {result['one_by_one_ms']:.1f} ms per mutant")
    else:
        start = time.perf_counter()
        serial = {key: statistics.median(_compile_ms((s.source, args.arch)) for _ in range(args.repeat))
                  for key, s in substrates.items()}
        one_by_one = time.perf_counter() - start
        jobs = [(s.source, args.arch) for s in substrates.values()] * args.repeat
        pooled = _parallel(jobs, args.workers)
        for key, ms in serial.items():
            print(f"{key:<64} {ms:8.1f} ms")
        result = {"serial_ms": serial, "median_ms": statistics.median(serial.values()), "pooled_s": pooled,
                  "one_by_one_s": one_by_one, "amortised_ms": pooled * 1000 / len(jobs)}
        print(f"\n{header}: {len(substrates)} substrates x {args.repeat}: median {result['median_ms']:.1f} ms "
              f"per substrate on one core; {result['amortised_ms']:.1f} ms amortised")
    if args.json:
        args.json.write_text(json.dumps({"nvrtc": nvrtc_version(), "arch": args.arch, "workers": args.workers,
                                         **result}, indent=1))
    print(f"ratio, one by one / pooled: {result['one_by_one_s']:.1f} s / {result['pooled_s']:.1f} s = "
          f"{result['one_by_one_s'] / result['pooled_s']:.2f}x")


if __name__ == "__main__":
    main()
