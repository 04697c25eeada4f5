"""How long a worker takes to start while the compile pool keeps every core busy.

A spare that replaces a crashed worker starts (spawn, `import torch`, a first matmul) while the
planner's process pool compiles the next problems on every spare core. This times that start
with no load, with one busy process per core at the workers' own priority, and with the same
load at `evaluation.compiling.COMPILE_NICENESS` (what `compile_pool` does since runs 25-28 on one H200
waited on spares for 16-18% of the workers' time).

    python bench/spare_warmup.py [--repeat 3] [--json OUT.json]

The CPU part only: on the H200 the warm-up also creates a CUDA context and library handles.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbm_toolkit.evaluation.compiling import COMPILE_NICENESS  # noqa: E402
from kbm_toolkit.evaluation.workers import Worker  # noqa: E402


def warm() -> None:
    """The CPU share of `cell_task.warm_up`: torch's import and a first matmul."""
    import torch

    x = torch.ones(64, 64)
    x @ x


def echo(task: int) -> int:
    """The worker's task: nothing, so the time measured is the start."""
    return task


def spin(niceness: int) -> None:
    """Keep one core busy at `niceness`, as an NVRTC compile in the planner's pool does."""
    os.nice(niceness)
    while True:
        pass


def start_time() -> float:
    """Seconds from asking a fresh worker for its first reply to getting it."""
    began = time.monotonic()
    with Worker(f"{__name__}:echo", warm=f"{__name__}:warm") as worker:
        reply = worker.run(1)
    assert reply.status == "ok", reply.message
    return time.monotonic() - began


def measure(niceness: int | None, repeat: int) -> list[float]:
    """Worker start times with one spinning process per core at `niceness` (None: no load)."""
    times = []
    for _ in range(repeat):
        ctx = mp.get_context("spawn")
        busy = [ctx.Process(target=spin, args=(niceness,), daemon=True)
                for _ in range(os.cpu_count() or 2)] if niceness is not None else []
        for p in busy:
            p.start()
        time.sleep(1.0 if busy else 0.0)  # every core spinning before the worker starts
        times.append(start_time())
        for p in busy:
            p.terminate()
            p.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    print(f"{os.cpu_count()} cores; worker start (spawn, import torch, a matmul), {args.repeat} times each")
    loads = {"idle machine": None, "every core busy, same priority": 0,
             f"every core busy at nice {COMPILE_NICENESS}": COMPILE_NICENESS}
    for label, niceness in loads.items():
        times = measure(niceness, args.repeat)
        results[label] = times
        print(f"  {label:<34} median {statistics.median(times):5.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
