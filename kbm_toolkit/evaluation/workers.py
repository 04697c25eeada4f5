"""Isolated worker processes: GPU work runs in a child, so a crash or hang costs one restart.

An illegal memory access poisons a CUDA context for good; only a fresh process recovers. The
parent never touches CUDA: it sends self-contained tasks, receives plain results, and writes the
store.
"""

from __future__ import annotations

import importlib
import inspect
import multiprocessing as mp
import os
import re
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator


@dataclass(frozen=True)
class Reply:
    """What became of one task."""

    status: str
    """`ok`, `error` (the task raised), `crash` (the worker died) or `timeout` (it was killed)."""
    value: Any = None
    message: str = ""


def follow(replies: Iterable[Reply], handlers: dict[str, Callable[[dict[str, Any]], bool | None]],
           lost: Callable[[Reply], None]) -> str | None:
    """Handle one task's streamed replies until it ends: each record by its kind's handler (True:
    stop reading, the worker is being replaced), a worker that died or overran by `lost`; the
    task's error line (`error: ...`) if it raised, else None."""
    for reply in replies:
        if reply.status == "item":
            handle = handlers.get(reply.value["kind"])
            if handle is not None and handle(reply.value):
                break
        elif reply.status == "ok":
            break
        elif reply.status == "error":
            return f"error: {reply.message.splitlines()[0] if reply.message else 'unknown'}{_where(reply.message)}"
        else:  # the worker itself crashed or was killed for overrunning
            lost(reply)
            break
    return None


def _where(message: str) -> str:
    """The innermost frame of a child's traceback in `message`, as ` (at file.py:N in name)`; "" without one."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', message)
    if not frames:
        return ""
    path, line, name = frames[-1]
    return f" (at {os.path.basename(path)}:{line} in {name})"


class WorkerClosed(Exception):
    """The worker was closed (the run is stopping): it starts no new child."""


READY_TIMEOUT_S = 600.0
"""A child that has not finished starting (imports, CUDA context, warm-up) by then is broken."""


def _load(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def context(preload: tuple[str, ...] = ()) -> Any:
    """The multiprocessing context children start from: `spawn`, or with `preload` a fork server
    that has imported those modules once (never CUDA: a child makes its own context), so a child
    starts in a fork instead of importing torch afresh (3.6-4.1 s of a spare's 4.5-5.3 s warm-up
    on the H200 host, `kbm runs --run N`). The first preload asked for in a process is the one."""
    if not preload:
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    return ctx


def start_server(preload: tuple[str, ...]) -> None:
    """Start the fork server of `context(preload)` now, without waiting for it: it imports those
    modules while the caller goes on (a run reads the store), and the first child forks sooner."""
    if preload:
        from multiprocessing import forkserver

        context(preload)
        forkserver.ensure_running()


PREPARE = "prepare"
"""The first item of a message that asks a spare to do work ahead (`Worker.prepare`), not a task."""


def _child_main(conn: Any, target: str, env: dict[str, str], warm: str | None, prepare: str | None) -> None:
    entered = time.time()  # the interpreter is up and this module imported (the parent's main module too)
    import signal

    # Ctrl-C (or `timeout -s INT`) reaches the whole process group: the parent decides when a
    # child stops, or a child dying mid-launch would read as that mutant crashing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    # the parent's environment as of the spawn (a fork server's children would have the server's,
    # from when it started), then the worker's own, before CUDA starts: e.g. CUDA_VISIBLE_DEVICES
    os.environ.clear()
    os.environ.update(env)
    from kbm_toolkit.errors import KbmError

    fn = _load(target)
    parts = {"target": time.time() - entered}
    if warm:  # e.g. import torch and create the CUDA context before any task arrives
        parts.update(_load(warm)() or {})  # it may say where its own time went
    # when it was warm, and where the time went: the parent knows when it spawned it
    conn.send(("ready", {"at": time.time(), "entered": entered, "parts": parts}, ""))
    prepared_at = None  # when this child last finished work ahead: a task sent meanwhile waited for it
    while True:
        try:
            task = conn.recv()
        except (EOFError, ConnectionResetError):  # the parent is gone (a stopped run): nothing to report to
            return
        if task is None:
            return
        if isinstance(task, tuple) and task[:1] == (PREPARE,):
            if conn.poll(0):  # a newer payload or a task waits already: this work would be wasted
                continue
            try:  # work ahead for a task this spare may get; it answers nothing
                if prepare:
                    _load(prepare)(task[1])
            except Exception:  # the task, if it comes, does the work itself
                pass
            prepared_at = time.time()
            continue
        if isinstance(task, dict) and prepared_at is not None:
            task["prepared_at"] = prepared_at
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
            # the innermost frames: where it was raised, which the parent's verdict names
            conn.send(("error", None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-8)}"))


class Worker:
    """One child process that runs `target(task)` for each task it is sent, restarted on demand.

    With `spares=N`, N more children are kept started (and warmed by `warm`, e.g. torch and a CUDA
    context; about 5 s each on the H200 host when spawned, `runs.stats.spares`), so replacing a
    crashed worker costs a swap, not a cold start; several spares absorb a burst of crashes (a
    rule that breaks every launch of a problem) while they warm in parallel. With `preload`,
    children fork from a server that has imported those modules (`context`). With `prepare`, the
    `standbys` spares first in line are handed the work `prepare(payload)` does ahead
    (`Worker.prepare`). Workers on one GPU can lend each other warm spares (`share_spares`): a
    burst of crashes in one worker then draws on the others' spares too, with no more children
    (each a CUDA context) on the GPU.
    """

    def __init__(self, target: str, env: dict[str, str] | None = None, warm: str | None = None,
                 spares: int = 0, preload: tuple[str, ...] = (), prepare: str | None = None,
                 standbys: int = 1) -> None:
        self.target = target
        self.env = dict(env or {})
        self.warm = warm
        self.spares = spares
        self.prepare_target = prepare
        self.standbys = standbys
        """How many spares, first in line, are handed each payload."""
        self._payload: Any = None
        """What the spares first in line should prepare (`prepare`), None for nothing."""
        self._payload_standbys = standbys
        """How many spares, first in line, are handed `_payload`: `standbys` unless `prepare` said."""
        self._briefed: dict[int, Any] = {}
        """Spare pid -> the payload it was handed last."""
        self._ctx = context(preload)
        self._proc: Any = None
        self._conn: Any = None
        self._spares: list[tuple[Any, Any]] = []
        self._dying: list[Any] = []
        self._closed = False
        self.restarts = 0
        self.waited_s = 0.0
        """Time spent waiting for a child to finish starting: spares too few or too slow to warm."""
        self.warm_s: list[float] = []
        """For each child put to work: seconds from its spawn until it was warm (said `ready`)."""
        self.found_warm = 0
        """Children put to work that were warm already: a spare that waited for its turn."""
        self.spares_lost = 0
        """Spares that died before they were needed (e.g. no GPU memory left for their context)."""
        self.warm_parts: list[dict[str, float]] = []
        """For each child put to work, where its warm-up went in seconds: `start` (spawn until its
        main function runs), `target` (importing the task's module), then what `warm` reports."""
        self.borrowed = 0
        """Children put to work that were a sibling's warm spare (`share_spares`)."""
        self._spawned: dict[int, float] = {}
        self._siblings: list[Worker] = []
        self._lock = threading.Lock()
        """Guards `_spares`, `_briefed` and `_spawned`: a sibling's thread may borrow a spare."""

    def share_spares(self, workers: list["Worker"]) -> None:
        """Let this worker put a sibling's warm spare to work when none of its own is warm:
        `workers` share its GPU, target and environment (those that differ are left out)."""
        self._siblings = [w for w in workers if w is not self and (w.target, w.env, w.warm, w.prepare_target)
                          == (self.target, self.env, self.warm, self.prepare_target)]

    def _lend(self) -> tuple[Any, Any, float] | None:
        """One of this worker's warm spares that is no standby (its process, pipe and spawn time),
        taken out of its pool for a sibling; None when it has none."""
        with self._lock:
            for spare in self._spares:
                if spare[0].pid not in self._briefed and spare[0].is_alive() and spare[1].poll(0):
                    self._spares.remove(spare)
                    return spare[0], spare[1], self._spawned.pop(spare[0].pid, time.time())
        return None

    def _borrow(self) -> tuple[Any, Any] | None:
        """A sibling's warm spare, now this worker's to put to work; None when none has one."""
        for sibling in self._siblings:
            lent = sibling._lend()
            if lent is not None:
                proc, conn, spawned = lent
                with self._lock:
                    self._spawned[proc.pid] = spawned
                return proc, conn
        return None

    def _briefed_now(self, spare: tuple[Any, Any]) -> bool:
        """Whether `spare` was handed the standing payload (`prepare`)."""
        return self._payload is not None and self._briefed.get(spare[0].pid) is self._payload

    def _spawn(self) -> tuple[Any, Any]:
        parent, child = self._ctx.Pipe()
        env = {**os.environ, **self.env}
        proc = self._ctx.Process(target=_child_main, args=(child, self.target, env, self.warm, self.prepare_target),
                                 daemon=True)
        spawned = time.time()
        proc.start()
        with self._lock:
            self._spawned[proc.pid] = spawned
        child.close()
        return proc, parent

    def _start(self) -> None:
        if self._closed:  # a thread still driving tasks after close() would leave orphans behind
            raise WorkerClosed
        start = time.monotonic()  # a fork server's first spawn waits for its imports: that is waiting too
        with self._lock:
            self._dying = [p for p in self._dying if p.is_alive()]  # is_alive() reaps the ones that exited
            alive = [s for s in self._spares if s[0].is_alive()]
            self.spares_lost += len(self._spares) - len(alive)
            self._spares = alive
            ready = [s for s in self._spares if s[1].poll(0)]  # warm already: its `ready` is waiting
            # a spare handed the payload has built what the task starts on, or is building it; one
            # still warming up costs more than a warm child that builds the input itself
            chosen = next((s for s in ready if self._briefed_now(s)), ready[0] if ready else None)
            if chosen is not None:
                self._spares.remove(chosen)
        borrowed = None if chosen is not None else self._borrow()  # a sibling's warm one beats a cold wait
        with self._lock:
            if chosen is None and borrowed is None and self._spares:  # its own, still warming: the standby first
                chosen = next((s for s in self._spares if self._briefed_now(s)), self._spares[0])
                self._spares.remove(chosen)
            self._briefed = {s[0].pid: self._briefed[s[0].pid] for s in self._spares if s[0].pid in self._briefed}
        self.found_warm += chosen in ready or borrowed is not None
        self.borrowed += borrowed is not None
        proc, conn = self._proc, self._conn = chosen or borrowed or self._spawn()
        if not conn.poll(READY_TIMEOUT_S):
            raise EOFError("the worker did not finish starting")
        _, ready, _ = conn.recv()  # `ready`; EOFError if it died starting
        if self._closed:  # closed by the stopping run while this child warmed up
            proc.kill()
            raise WorkerClosed
        self.waited_s += time.monotonic() - start
        with self._lock:
            spawned = self._spawned.pop(proc.pid, ready["entered"])
        self.warm_s.append(ready["at"] - spawned)
        self.warm_parts.append({"start": ready["entered"] - spawned, **ready["parts"]})

    def _refill(self) -> None:
        """Start spares up to `spares`, and brief those first in line. Called once the active child
        has its task: forking from a server that holds torch takes a while, and the child works
        meanwhile instead of waiting for it."""
        while len(self._spares) < self.spares and not self._closed:
            spare = self._spawn()
            with self._lock:
                self._spares.append(spare)
        self._brief()

    def prepare(self, payload: Any, standbys: int | None = None) -> None:
        """Have the spares first in line (`standbys` of them, the worker's own number by default)
        run `prepare(payload)` ahead (e.g. build the input the active child is on), so that taking
        over after a crash starts with it done; a no-op without a `prepare` function. The latest
        payload stands until the next; a spare skips a payload when a newer one (or a task) is
        already waiting for it."""
        if self.prepare_target is None or payload == self._payload:
            return  # the same work again (a restart's `rebuilt` record): the briefed spare has it or is on it
        self._payload = payload
        self._payload_standbys = self.standbys if standbys is None else standbys
        self._brief()

    def _brief(self) -> None:
        """Hand `_payload` to the `_payload_standbys` spares first in line, those that lack it."""
        if self._payload is None:
            return
        with self._lock:  # a sibling borrows no standby: it holds this worker's input
            for proc, conn in self._spares[:self._payload_standbys]:
                if self._briefed.get(proc.pid) is self._payload:
                    continue
                try:
                    conn.send((PREPARE, self._payload))
                except (BrokenPipeError, OSError):  # it died: the next start counts it, and replaces it
                    continue
                self._briefed[proc.pid] = self._payload

    def prestart(self) -> None:
        """Start the first child and the spares now, without waiting for them to warm (e.g. while
        the first task is still being planned); the first task takes the first of them that is warm."""
        if self._closed or self._proc is not None or self._spares:
            return
        start = time.monotonic()
        children = [self._spawn() for _ in range(self.spares + 1)]
        with self._lock:
            self._spares = children
        self.waited_s += time.monotonic() - start  # a fork server's first spawn waits for its imports

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
        try:
            if self._proc is None or not self._proc.is_alive():
                if self._proc is not None:
                    self.restarts += 1
                self._start()
            # when it was sent: the task can tell how long it waited for its child (a spare still
            # preparing, the pipe)
            self._conn.send({**task, "sent_at": time.time()} if isinstance(task, dict) else task)
            self._refill()
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
        except (EOFError, OSError) as e:  # OSError: a pipe close() shut under the wait, among others
            if self._closed:  # close() killed the busy child: the run's stop, not the mutant's crash
                raise WorkerClosed from None
            if not isinstance(e, (EOFError, BrokenPipeError, ConnectionResetError)):
                raise
            code = self._proc.exitcode if self._proc is not None else None
            self._kill()
            yield Reply("crash", message=f"worker died (exit code {code})")

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()  # no wait: a dying CUDA process can take a second to exit; reaped later
            self._dying.append(self._proc)
        self._proc = None
        self.restarts += 1

    def retire(self) -> None:
        """Replace the active child (e.g. its CUDA context is gone); a warm spare takes over."""
        self._kill()  # a poisoned context has nothing worth a clean exit

    def pending(self) -> bool:
        """Whether the active child has sent something not read yet (or died): the stream's next
        reply comes without waiting. A Ray actor hosting this worker batches replies by it."""
        try:
            return self._proc is not None and self._conn.poll(0)
        except (OSError, ValueError):  # the pipe is closed: the next reply is the crash
            return True

    def close(self, wait_s: float = 5.0) -> None:
        """Ask the worker and its spares to exit; kill any still running after `wait_s` seconds
        (one busy with a task, say) rather than wait for it."""
        self._closed = True
        with self._lock:
            children = [(self._proc, self._conn), *self._spares]
            self._proc, self._spares = None, []
        for proc, conn in children:
            if proc is not None and proc.is_alive():
                try:
                    conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
        deadline = time.monotonic() + wait_s
        for proc in [p for p, _ in children if p is not None] + self._dying:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        self._dying = []

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
