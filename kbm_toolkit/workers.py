"""Isolated worker processes: GPU work runs in a child, so a crash or hang costs one restart.

An illegal memory access poisons a CUDA context for good; only a fresh process recovers. The
parent never touches CUDA: it sends self-contained tasks, receives plain results, and writes the
store.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import traceback
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reply:
    """What became of one task."""

    status: str
    """`ok`, `error` (the task raised), `crash` (the worker died) or `timeout` (it was killed)."""
    value: Any = None
    message: str = ""


def _child_main(conn: Any, target: str) -> None:
    from kbm_toolkit.errors import KbmError

    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            conn.send(("ok", fn(task), ""))
        except KbmError as e:
            conn.send(("error", None, e.line()))
        except Exception as e:  # report anything a task raises; the worker itself stays up
            conn.send(("error", None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"))


class Worker:
    """One child process that runs `target(task)` for each task it is sent, restarted on demand."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_child_main, args=(child, self.target), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def run(self, task: Any, timeout: float | None = None) -> Reply:
        """Send `task`, wait up to `timeout` seconds; a dead or overrunning worker is replaced."""
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self.restarts += 1
            self._start()
        try:
            self._conn.send(task)
            if not self._conn.poll(timeout):
                self._kill()
                return Reply("timeout", message=f"no answer within {timeout:g} s")
            status, value, message = self._conn.recv()
            return Reply(status, value, message)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._proc.exitcode if self._proc is not None else None
            self._kill()
            return Reply("crash", message=f"worker died (exit code {code})")

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(timeout=10)
        self._proc = None
        self.restarts += 1

    def close(self) -> None:
        """Ask the worker to exit, then make sure it has."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(timeout=10)
            except (BrokenPipeError, OSError):
                pass
            if self._proc.is_alive():
                self._proc.kill()
        self._proc = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
