"""Measure NVRTC compile time per substrate: median per substrate on one core, and amortised
throughput with one process per core. No cache, no GPU needed.

    python bench/compile_substrates.py [--level demo] [--repeat 3] [--arch sm_90] [--kernelbench PATH]

Prints a table and one summary line; `--json FILE` writes the raw timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kbm_toolkit.nvrtc import compile_source, nvrtc_version
from kbm_toolkit.problems import ProblemSet
from kbm_toolkit.substrates import has_substrate, substrate_for


def _compile_ms(args: tuple[str, str]) -> float:
    source, arch = args
    start = time.perf_counter()
    compile_source(source, arch, use_cache=False)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default=None, help="only this level (default: every substrate)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--kernelbench", default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    problems = [p for p in ProblemSet.discover(args.kernelbench).select(level=args.level) if has_substrate(p)]
    sources = {p.key: substrate_for(p).source for p in problems}
    _compile_ms((next(iter(sources.values())), args.arch))  # load NVRTC once before timing

    serial = {key: statistics.median(_compile_ms((src, args.arch)) for _ in range(args.repeat))
              for key, src in sources.items()}
    jobs = [(src, args.arch) for src in sources.values()] * args.repeat
    with ProcessPoolExecutor(args.workers) as pool:
        list(pool.map(_compile_ms, jobs[: args.workers]))  # warm every worker
        start = time.perf_counter()
        list(pool.map(_compile_ms, jobs))
        wall = time.perf_counter() - start

    for key, ms in serial.items():
        print(f"{key:<60} {ms:8.1f} ms")
    median = statistics.median(serial.values())
    amortised = wall * 1000 / len(jobs)
    print(f"\nNVRTC {nvrtc_version()}, {args.arch}, {len(sources)} substrates x {args.repeat}: "
          f"median {median:.1f} ms per substrate on one core; "
          f"{amortised:.1f} ms amortised with {args.workers} processes")
    if args.json:
        args.json.write_text(json.dumps({"nvrtc": nvrtc_version(), "arch": args.arch, "serial_ms": serial,
                                         "amortised_ms": amortised, "workers": args.workers}, indent=1))


if __name__ == "__main__":
    main()
