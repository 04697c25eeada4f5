"""Measure NVRTC compile time: per substrate, or per mutant amortised over every core.

    python bench/compile_throughput.py [--level demo] [--repeat 3] [--arch sm_90] [--kernelbench PATH]
    python bench/compile_throughput.py --mutants [--level demo] [--limit 2000]

Substrates: median per substrate on one core, then amortised with one process per core.
Mutants: every distinct mutant source of the selected substrates (all rules), compiled once each
with one process per core; amortised ms per mutant = wall time / mutants, the figure a user
waits for. No cache, no GPU needed. `--json FILE` writes the raw timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.cuda.nvrtc import compile_source, nvrtc_version
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.substrate import has_substrate, substrate_for


def _compile_ms(args: tuple[str, str]) -> float:
    source, arch = args
    start = time.perf_counter()
    try:
        compile_source(source, arch, use_cache=False)
    except Exception:  # a mutant that does not compile still costs its compile time
        pass
    return (time.perf_counter() - start) * 1000


def _parallel(jobs: list[tuple[str, str]], workers: int) -> float:
    """Wall seconds to compile `jobs` with `workers` warm processes."""
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_compile_ms, jobs[:workers]))  # start and warm every worker first
        start = time.perf_counter()
        list(pool.map(_compile_ms, jobs, chunksize=4))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default=None, help="only this level (default: every substrate)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--kernelbench", default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--mutants", action="store_true", help="time mutants instead of substrates")
    parser.add_argument("--limit", type=int, default=0, help="at most this many mutants (0: all)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    problems = [p for p in ProblemSet.discover(args.kernelbench).select(level=args.level) if has_substrate(p)]
    substrates = {p.key: substrate_for(p) for p in problems}
    _compile_ms((next(iter(substrates.values())).source, args.arch))  # load NVRTC before timing
    header = f"NVRTC {nvrtc_version()}, {args.arch}, {args.workers} processes"

    if args.mutants:
        rules = load_rules()
        sources = sorted({m.kernel_source for s in substrates.values() for m in generate(s, rules)
                          if m.target == "kernel"})
        if args.limit:
            sources = sources[: args.limit]
        wall = _parallel([(s, args.arch) for s in sources], args.workers)
        result = {"mutants": len(sources), "wall_s": wall, "amortised_ms": wall * 1000 / len(sources)}
        print(f"{header}: {len(sources)} distinct mutant sources from {len(substrates)} substrates in "
              f"{wall:.1f} s: {result['amortised_ms']:.1f} ms per mutant amortised")
    else:
        serial = {key: statistics.median(_compile_ms((s.source, args.arch)) for _ in range(args.repeat))
                  for key, s in substrates.items()}
        jobs = [(s.source, args.arch) for s in substrates.values()] * args.repeat
        wall = _parallel(jobs, args.workers)
        for key, ms in serial.items():
            print(f"{key:<64} {ms:8.1f} ms")
        result = {"serial_ms": serial, "median_ms": statistics.median(serial.values()),
                  "amortised_ms": wall * 1000 / len(jobs)}
        print(f"\n{header}: {len(substrates)} substrates x {args.repeat}: median {result['median_ms']:.1f} ms "
              f"per substrate on one core; {result['amortised_ms']:.1f} ms amortised")
    if args.json:
        args.json.write_text(json.dumps({"nvrtc": nvrtc_version(), "arch": args.arch, "workers": args.workers,
                                         **result}, indent=1))


if __name__ == "__main__":
    main()
