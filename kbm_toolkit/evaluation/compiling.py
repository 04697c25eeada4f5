"""The compile pool: the parent's processes that compile problems (NVRTC) ahead of the GPU workers."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from concurrent.futures import ProcessPoolExecutor

COMPILE_NICENESS = 10
"""How much lower the compile pool's CPU priority is than the workers' (`os.nice`)."""


def compile_pool(size: int) -> ProcessPoolExecutor:
    """The planner's process pool, at a lower CPU priority than the workers and their spares.

    Compiling fills every spare core; a spare warming up after a crash (torch, a CUDA context)
    competed with it, and workers waited on spares for 16-30% of their time on one H200.
    """
    return ProcessPoolExecutor(size, mp.get_context("spawn"), initializer=_compile_process_init)


def _compile_process_init() -> None:
    """Lower the priority, and leave SIGINT to the parent, which ends the pool when a run stops.

    `timeout -s INT` signals the whole process group: each compile process printed its own
    KeyboardInterrupt traceback, or raised one inside the planner's thread."""
    os.nice(COMPILE_NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def abandon(pool: ProcessPoolExecutor) -> None:
    """Stop a compile pool now: cancel what is queued and end the compiles under way.

    Python waits at exit for a pool's running tasks, and compiling a whole problem can outlast
    the grace `timeout -k` gives a stopped run; its plans are worth nothing to a run that stopped.
    """
    processes = list((pool._processes or {}).values())  # no public way to end running tasks before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
