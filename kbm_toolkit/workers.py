"""Isolated worker processes: GPU work runs in a child, so a crash or hang costs one restart.

An illegal memory access poisons a CUDA context for good; only a fresh process recovers. The
parent never touches CUDA: it sends self-contained tasks, receives plain results, and writes the
store.
"""

from __future__ import annotations

import importlib
import inspect
import multiprocessing as mp
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator


@dataclass(frozen=True)
class Reply:
    """What became of one task."""

    status: str
    """`ok`, `error` (the task raised), `crash` (the worker died) or `timeout` (it was killed)."""
    value: Any = None
    message: str = ""


def _child_main(conn: Any, target: str, env: dict[str, str]) -> None:
    import os

    os.environ.update(env)  # before the target imports torch: e.g. CUDA_VISIBLE_DEVICES
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
            result = fn(task)
            if inspect.isgenerator(result):
                for item in result:  # streamed, so the parent sees progress and knows the culprit
                    conn.send(("item", item, ""))
                result = None
            conn.send(("ok", result, ""))
        except KbmError as e:
            conn.send(("error", None, e.line()))
        except Exception as e:  # report anything a task raises; the worker itself stays up
            conn.send(("error", None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"))


class Worker:
    """One child process that runs `target(task)` for each task it is sent, restarted on demand."""

    def __init__(self, target: str, env: dict[str, str] | None = None) -> None:
        self.target = target
        self.env = dict(env or {})
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_child_main, args=(child, self.target, self.env),
                                       daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def run(self, task: Any, timeout: float | None = None) -> Reply:
        """Send `task`, wait up to `timeout` seconds; a dead or overrunning worker is replaced."""
        replies = list(self.stream(task, timeout))
        return replies[-1]

    def stream(self, task: Any, timeout: float | None | Callable[[], float | None] = None) -> Iterator[Reply]:
        """Send `task` and yield each item it streams (status `item`), then its final reply.

        `timeout` bounds the wait for each message; a callable is asked before each wait, so the
        deadline can follow what the worker said it is doing. A dead worker ends the stream with
        `crash`, an overrunning one is killed and ends it with `timeout`; either is replaced.
        """
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self.restarts += 1
            self._start()
        try:
            self._conn.send(task)
            while True:
                wait = timeout() if callable(timeout) else timeout
                if not self._conn.poll(wait):
                    self._kill()
                    yield Reply("timeout", message=f"no answer within {wait:g} s")
                    return
                status, value, message = self._conn.recv()
                yield Reply(status, value, message)
                if status != "item":
                    return
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._proc.exitcode if self._proc is not None else None
            self._kill()
            yield Reply("crash", message=f"worker died (exit code {code})")

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
