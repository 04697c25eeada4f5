"""Submissions through a checker in worker processes, several at once on one GPU.

A CUDA error (an illegal address, say) poisons a process's context for good: a worker checks its
context after every submission and exits when it is gone, and the pool starts a fresh one. A
submission that kills its worker (`crash`) or overruns its deadline (`timeout`, the worker is
killed) costs only itself. The parent never touches CUDA; each child writes what the evals print
to its own log file.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from kbm_toolkit.judging import PYTORCH_DEFAULT, STRICT

TIMEOUT_S = 300.0
"""Per submission; a healthy one takes seconds, the first in a fresh worker ~10 s more (torch, CUDA)."""


@dataclass
class Task:
    """One submission for one checker: everything a worker needs, as plain data."""

    id: int
    checker: str
    """`kernelbench` or `kbv`."""
    checkout: str
    problem_path: str
    submission: str
    """The submission's source text (`model_new.submission_source`)."""
    trials: int = 5
    tolerance: float | None = None
    """The fp32 tolerance to judge at, patched in where it is not the eval's own (None: the eval's own)."""
    hidden_test_path: str | None = None
    reference: str = STRICT
    """`strict-fp32`: the eval runs with TF32 off (as kbm's references); `pytorch-default`: as shipped."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Carried back untouched (the parent's bookkeeping)."""


def _set_reference(reference: str) -> None:
    import torch

    # cuDNN convolutions use TF32 unless told not to (PyTorch's default); cuBLAS matmuls do not
    torch.backends.cudnn.allow_tf32 = reference == PYTORCH_DEFAULT
    torch.backends.cuda.matmul.allow_tf32 = False


def evaluate(task: Task) -> dict[str, Any]:
    """Run one task's submission through its checker, in this process: the verdict as a dict."""
    from kbm_toolkit.conformance import checkers

    _set_reference(task.reference)
    problem_src = Path(task.problem_path).read_text()
    if task.checker == checkers.KBV:
        verdict = checkers.kbv_verdict(problem_src, task.submission, task.hidden_test_path or "", task.trials,
                                       checkout=task.checkout, tolerance=task.tolerance)
    else:
        verdict = checkers.kernelbench_verdict(problem_src, task.submission, task.trials, task.tolerance,
                                               checkout=task.checkout)
    return asdict(verdict)


def cuda_usable() -> bool:
    """Whether this process's CUDA context still runs work (a sticky error makes every call fail)."""
    import torch

    try:
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        return True
    except Exception:  # any error here means the context is gone
        return False


def _load(name: str) -> Callable[..., Any]:
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def _child(conn: Any, log_path: str, threads: int, target: str, health: str | None) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a worker stops
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)  # the evals print freely, CUDA's own messages included: keep the terminal for progress
    os.dup2(fd, 2)
    # the evals draw inputs on the CPU: share the cores among workers (torch reads this at import)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    run, usable = _load(target), _load(health) if health else None
    if usable is not None and not usable():  # also the warm-up: torch and the CUDA context, before any task
        conn.send({"ready": False, "status": "error", "poisoned": True,
                   "message": f"the worker has no usable CUDA device ({health} said no)"})
        return
    conn.send({"ready": True})
    while True:
        try:
            task = conn.recv()
        except (EOFError, ConnectionResetError):
            return
        if task is None:
            return
        try:
            reply = {"status": "ok", "verdict": run(task)}
        except Exception as e:  # outside the eval (a checkout that does not import, say): no verdict
            reply = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        reply["poisoned"] = usable is not None and not usable()
        conn.send(reply)
        if reply["poisoned"]:
            return  # a fresh worker takes over


EVALUATE = "kbm_toolkit.conformance.workers:evaluate"
HEALTH = "kbm_toolkit.conformance.workers:cuda_usable"
"""What a worker runs per task, and asks after each (by name: the child imports them)."""


@dataclass(eq=False)
class _Slot:
    proc: Any
    conn: Any
    task: Task | None = None
    deadline: float = 0.0
    started: float = 0.0
    ready: bool = False
    """It said it started: a death before that is not its task's doing."""


class Pool:
    """`workers` child processes on one GPU running `target(task)` for each task, each replaced when
    it dies, hangs or (asked `health()` after each task) has lost its CUDA context."""

    def __init__(self, workers: int, log_dir: Path, timeout: float = TIMEOUT_S, threads: int | None = None,
                 target: str = EVALUATE, health: str | None = HEALTH) -> None:
        self.workers = max(1, workers)
        self.target, self.health = target, health
        self.log_dir = Path(log_dir)
        self.timeout = timeout
        self.threads = threads or max(1, (os.cpu_count() or 1) // self.workers)
        self._ctx = mp.get_context("spawn")
        self._spawned = 0
        self.replaced = 0

    def _spawn(self) -> _Slot:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        parent, child = self._ctx.Pipe()
        log = self.log_dir / f"worker-{self._spawned}.log"
        self._spawned += 1
        proc = self._ctx.Process(target=_child, args=(child, str(log), self.threads, self.target, self.health),
                                 daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def _replace(self, slots: list[_Slot], slot: _Slot) -> _Slot:
        if slot.proc.is_alive():
            slot.proc.kill()  # its own child, by its handle
        slot.proc.join(timeout=5)
        fresh = slots[slots.index(slot)] = self._spawn()
        self.replaced += 1
        return fresh

    def run(self, tasks: Iterable[Task], stop_at: float | None = None) -> Iterator[tuple[Task, dict[str, Any]]]:
        """Each task with its reply (`status` ok / error / crash / timeout, `verdict`, `seconds`),
        in the order they finish; none is started after `stop_at` (time.monotonic()), and those
        running then are waited for."""
        pending = deque(tasks)
        if stop_at is not None and time.monotonic() >= stop_at:
            return
        slots = [self._spawn() for _ in range(min(self.workers, len(pending)))]
        try:
            while pending or any(s.task for s in slots):
                if stop_at is not None and time.monotonic() >= stop_at:
                    pending.clear()
                for slot in list(slots):
                    if slot.task is None and pending:
                        self._start(slots, slot, pending.popleft())
                if not any(s.task for s in slots):
                    break
                busy = [s for s in slots if s.task is not None]
                now = time.monotonic()
                ready = wait([s.conn for s in busy], timeout=max(0.0, min(s.deadline for s in busy) - now))
                for slot in list(busy):
                    yield from self._collect(slots, slot, slot.conn in ready)
        finally:
            self.close(slots)

    def _start(self, slots: list[_Slot], slot: _Slot, task: Task) -> None:
        try:
            slot.conn.send(task)
        except (BrokenPipeError, OSError):  # it died idle (e.g. at start-up): a fresh one takes the task
            slot = self._replace(slots, slot)
            slot.conn.send(task)
        slot.task, slot.started = task, time.monotonic()
        slot.deadline = slot.started + self.timeout

    def _collect(self, slots: list[_Slot], slot: _Slot, ready: bool) -> Iterator[tuple[Task, dict[str, Any]]]:
        task, elapsed = slot.task, time.monotonic() - slot.started
        assert task is not None
        if ready:
            try:
                reply = slot.conn.recv()
            except (EOFError, ConnectionResetError):
                slot.proc.join(timeout=2)  # reaped, so its exit code is known
                died = f"the worker died (exit code {slot.proc.exitcode})"
                reply = ({"status": "crash", "message": died} if slot.ready else
                         {"status": "error", "message": died + " while starting"})
                reply["poisoned"] = True
            if reply.get("ready"):
                slot.ready = True
                return
            reply.pop("ready", None)  # False: it could not start (its message says why)
        elif time.monotonic() >= slot.deadline:
            reply = {"status": "timeout" if slot.ready else "error", "poisoned": True,
                     "message": f"no verdict within {self.timeout:g} s{'' if slot.ready else ' (still starting)'}: "
                                "worker killed"}
        else:
            return
        slot.task = None
        reply["seconds"] = elapsed
        if reply.get("poisoned"):
            self._replace(slots, slot)
        yield task, reply

    def close(self, slots: list[_Slot]) -> None:
        """Ask every worker to exit; kill one still busy after a few seconds."""
        for slot in slots:
            try:
                slot.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for slot in slots:
            slot.proc.join(timeout=5)
            if slot.proc.is_alive():
                slot.proc.kill()
                slot.proc.join(timeout=5)
