"""Ray as the GPU workers' engine: `kbm run --ray auto|ADDRESS` runs each worker in a Ray actor.

Each actor reserves a GPU of the cluster (`num_gpus=1`, shared by `--workers`) and hosts a
`workers.Worker` there: the child processes, warm spares and pipe of a local run, on the GPU Ray
gave it (Ray sets CUDA_VISIBLE_DEVICES; the children inherit it). The parent's side, `RayWorker`,
is a drop-in for `Worker` (`stream`, `run`, `retire`, `close` and the start-up stats) that run.py
and driver.py use unchanged: the driver's deadlines and crash handling, the collector, and a store
written by the parent alone.

Why an actor hosts a Worker rather than running the task itself:
- Ray streams a generator's items asynchronously, so an actor that dies just after yielding can
  lose what it yielded (in 4 of 10 trials on Ray 2.60, once 49 of 50 items). The `start` record
  must survive the crash it precedes, since it names the culprit. A dead child's pipe still
  holds what it sent, and the actor outlives the child to forward it.
- A dead actor gives its GPU back to Ray's scheduler, and its replacement starts cold (Ray's
  worker process, imports, a CUDA context: 5-10 s on an H200), while the KernelBench pool's
  runs replace workers every few seconds (run 43: 125 restarts in 413 s). The spares absorb
  that.

The parent pulls records in batches (`_Host.pull`): one call waits up to the driver's deadline
for the next record, then returns it with whatever else has arrived, so Ray costs one round trip
per wait, not per record. A mutant's crash or deadline overrun costs a child in the actor and is
a `crash` or `timeout`, as locally. An actor that dies (its node lost, a bug), or that does not
answer within the deadline plus `ANSWER_S` (then `ray.kill`ed), ends the stream with no reply:
the actor runs no CUDA, so its loss is the cluster's, never the mutant's, and the driver charges
no cell and sends the task again, to a new actor. Actors belong to the parent's Ray job, so a
killed parent takes them with it (and Ray their children), and the next `kbm run` resumes from
the store. Every node needs kbm installed and the problem files at the same paths; the parent's
`KBM_*` settings travel with each actor.

Ray is imported only here, and only when a run asks for it (`require`).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Iterator

from kbm_toolkit.errors import NoDevice, OptionError
from kbm_toolkit.evaluation.options import GPU_PRELOAD, RunOptions
from kbm_toolkit.evaluation.workers import READY_TIMEOUT_S, Reply, Worker, WorkerClosed

INSTALL = "--ray needs Ray, which is not installed here: install the ray extra (pip install 'kbm-toolkit[ray]')"
BATCH = 256
"""Replies one pull returns at most: the first, and those that had arrived by then."""
ANSWER_S = 60.0
"""How much longer than the driver's deadline the parent waits for an actor's answer before it
calls the actor lost and kills it: the time a record takes across the cluster, and then some."""
STATS = {"restarts": int, "waited_s": float, "warm_s": list, "found_warm": int, "spares_lost": int,
         "warm_parts": list, "borrowed": int}
"""A `Worker`'s start-up measures, which `stats.spare_stats` and the run's summary read, each with
the type of its empty value."""

Stats = dict[str, Any]


def require() -> Any:
    """The `ray` module; OptionError (one line, a usage error) when Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise OptionError(INSTALL) from None
    return ray


def connect(address: str) -> Any:
    """The `ray` module, connected to the cluster at `address` (`auto`: the one `ray start` runs
    here, or RAY_ADDRESS's) unless this process is connected already; NoDevice when none answers."""
    ray = require()
    if not ray.is_initialized():
        try:
            ray.init(address=address)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise NoDevice(f"--ray {address}: no Ray cluster to join ({_first_line(e)}); "
                           "`ray start --head` starts one") from None
    return ray


def cluster_gpus(address: str) -> int:
    """How many GPUs the Ray cluster at `address` has."""
    return int(connect(address).cluster_resources().get("GPU", 0))


def forwarded_env() -> dict[str, str]:
    """The parent's settings an actor takes on: every `KBM_*` variable (packs, caches, checkouts)."""
    return {k: v for k, v in os.environ.items() if k.startswith("KBM_")}


def describe_device(address: str, num_gpus: float = 1.0) -> dict[str, Any]:
    """What a GPU worker on the cluster sees (as `device.describe_device` here: `cuda` False when
    none reports a device), with the cluster's address (`ray`) and GPU count (`ray_gpus`)."""
    from kbm_toolkit.evaluation.gate import GATE_WORKER  # the gate's worker describes its device

    gpus = cluster_gpus(address)
    seen: dict[str, Any] = {"cuda": False}
    if gpus or not num_gpus:  # an actor asking for a GPU the cluster lacks would wait for ever
        with RayWorker(GATE_WORKER, forwarded_env(), num_gpus=num_gpus) as worker:
            reply = worker.run({"op": "describe"}, timeout=120)
        if reply.status == "ok":
            seen = reply.value
    return {**seen, "ray": address, "ray_gpus": gpus}


def ray_workers(options: RunOptions, warm: str | None, spares: int) -> list["RayWorker"]:
    """The run's GPU workers as Ray actors: `gpus` x `workers_per_gpu` of them, each reserving
    its share of one GPU (`ray_gpus` / `workers_per_gpu`), each with `spares` warm children."""
    connect(options.ray or "auto")
    share, env = options.ray_gpus / options.workers_per_gpu, forwarded_env()
    return [RayWorker(options.target, env, warm, spares, share) for _ in range(options.gpus * options.workers_per_gpu)]


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _stats(worker: Worker) -> Stats:
    return {name: getattr(worker, name) for name in STATS}


def _no_stats() -> Stats:
    return {name: empty() for name, empty in STATS.items()}


class _Host:
    """The actor's side: a `Worker` on the GPU Ray reserved for this actor, and its stream under way."""

    def __init__(self, target: str, env: dict[str, str], warm: str | None, spares: int) -> None:
        os.environ.update(env)  # before any child starts: they inherit it
        self.worker = Worker(target, warm=warm, spares=spares, preload=GPU_PRELOAD if warm else ())
        self.replies: Iterator[Reply] | None = None
        self.wait: float | None = None
        self.sent: tuple = ()

    def ready(self) -> bool:
        """Answers once the actor is up: it has its GPU and has imported kbm."""
        return True

    def pull(self, wait: float | None, task: Any = None) -> tuple[list[tuple[str, Any, str]], Stats | None]:
        """The stream's next reply, waiting up to `wait` seconds as `Worker.stream` does (a child
        that overruns is killed: `timeout`), with every reply that has arrived since, up to
        `BATCH`; `task` begins a new stream. With them, the worker's stats if they changed."""
        if task is not None:
            self.replies = self.worker.stream(task, lambda: self.wait)
        self.wait = wait
        out: list[tuple[str, Any, str]] = []
        for reply in self.replies or ():
            out.append((reply.status, reply.value, reply.message))
            if reply.status != "item" or len(out) >= BATCH or not self.worker.pending():
                break
        if not out or out[-1][0] != "item":
            self.replies = None
        return out or [("crash", None, "the actor has no task under way")], self._changed()

    def _changed(self) -> Stats | None:
        w = self.worker
        now = (w.restarts, w.waited_s, len(w.warm_s), w.found_warm, w.spares_lost)
        if now == self.sent:
            return None
        self.sent = now
        return _stats(w)

    def retire(self) -> Stats:
        """The worker's `retire`: a warm spare replaces the active child."""
        self.replies = None
        self.worker.retire()
        return _stats(self.worker)

    def close(self, wait_s: float) -> Stats:
        """The worker's `close`, while a pull may still be waiting (the actor runs two calls at once)."""
        self.worker.close(wait_s)
        return _stats(self.worker)


@functools.cache
def _host_actor(num_gpus: float) -> Any:
    """`_Host` as a Ray actor class reserving `num_gpus`: never restarted by Ray (a new one is
    the parent's choice), and taking a `close` while a `pull` waits."""
    ray = require()
    return ray.remote(num_gpus=num_gpus, max_restarts=0, max_task_retries=0, max_concurrency=2)(_Host)


class RayWorker:
    """A drop-in for `workers.Worker` whose children run in a Ray actor on a GPU of the cluster;
    the actor is started at the first task and replaced when it dies or stops answering."""

    def __init__(self, target: str, env: dict[str, str] | None = None, warm: str | None = None,
                 spares: int = 0, num_gpus: float = 1.0) -> None:
        self.target, self.env, self.warm, self.spares = target, dict(env or {}), warm, spares
        self.num_gpus = num_gpus
        self._ray = require()
        self._actor: Any = None
        self._closed = False
        self._gone: Stats = _no_stats()
        """What the actors before this one measured, summed."""
        self._now: Stats = _no_stats()
        """What the current actor's worker measured, as of its last answer."""
        self.replaced = 0
        """Actors that died or were killed, each replaced by a new one at the next task."""
        self.lost: list[str] = []
        """Why each of them was lost."""
        self.actor_s = 0.0
        """Time spent waiting for actors to start (Ray scheduling them, their imports)."""

    def _total(self, name: str) -> Any:
        return self._gone[name] + self._now[name]

    @property
    def restarts(self) -> int:
        """Children replaced inside the actors, and actors replaced."""
        return self._total("restarts") + self.replaced

    @property
    def waited_s(self) -> float:
        """Time spent waiting for a child, or an actor, to finish starting."""
        return self._total("waited_s") + self.actor_s

    @property
    def warm_s(self) -> list[float]:
        """As `Worker.warm_s`, over every actor's children."""
        return self._total("warm_s")

    @property
    def found_warm(self) -> int:
        """As `Worker.found_warm`, over every actor's children."""
        return self._total("found_warm")

    @property
    def spares_lost(self) -> int:
        """As `Worker.spares_lost`, over every actor's children."""
        return self._total("spares_lost")

    @property
    def borrowed(self) -> int:
        """As `Worker.borrowed`: always 0, each actor's worker having no sibling to borrow from."""
        return self._total("borrowed")

    @property
    def warm_parts(self) -> list[dict[str, float]]:
        """As `Worker.warm_parts`, over every actor's children."""
        return self._total("warm_parts")

    def _start(self) -> None:
        if self._closed:  # as Worker: a thread still driving tasks after close() starts nothing
            raise WorkerClosed
        begun = time.monotonic()
        self._actor = _host_actor(self.num_gpus).remote(self.target, self.env, self.warm, self.spares)
        try:  # GetTimeoutError: never scheduled (no GPU free for long); `stream` then calls it lost
            self._ray.get(self._actor.ready.remote(), timeout=READY_TIMEOUT_S)
        finally:
            self.actor_s += time.monotonic() - begun

    def prestart(self) -> None:
        """As `Worker.prestart`, a no-op here: the actor starts its own children when it is placed."""

    def prepare(self, payload: Any, standbys: int | None = None) -> None:
        """As `Worker.prepare`, a no-op here: an actor's spares build nothing ahead."""

    def run(self, task: Any, timeout: float | None = None) -> Reply:
        """As `Worker.run`: send `task`, wait up to `timeout` seconds for each message, the final
        reply (`crash` when the actor was lost)."""
        replies = list(self.stream(task, timeout))
        if replies and replies[-1].status != "item":
            return replies[-1]
        return Reply("crash", message=self.lost[-1] if self.lost else "the Ray actor was lost")

    def stream(self, task: Any, timeout: float | None | Callable[[], float | None] = None) -> Iterator[Reply]:
        """As `Worker.stream`: each item `task` streams, then its final reply; `timeout` (or what
        the callable says before each wait) bounds the wait for each message. A lost actor (dead,
        or silent past the wait and `ANSWER_S`) ends the stream with no final reply (`lost` says why)."""
        ray, wait, started = self._ray, None, self._actor is not None
        try:
            if not started:
                self._start()
                started = True
            actor, begin = self._actor, task
            while True:
                if self._closed:
                    raise WorkerClosed
                wait = timeout() if callable(timeout) else timeout
                ref = actor.pull.remote(wait, begin)
                begin = None
                replies, stats = ray.get(ref, timeout=None if wait is None else wait + ANSWER_S)
                if stats is not None:
                    self._now = stats
                if self._closed:  # its child was killed by close(): whatever came last is the run's stop
                    raise WorkerClosed
                for status, value, message in replies:
                    yield Reply(status, value, message)
                if replies[-1][0] != "item":
                    return
        except ray.exceptions.RayError as e:
            if self._closed:  # the run stopped and closed this worker under the task
                raise WorkerClosed from None
            if not started:  # never scheduled (no GPU free), or it failed to start
                self._lose(f"no Ray actor started: {_first_line(e)}")
            elif isinstance(e, ray.exceptions.GetTimeoutError):
                self._lose(f"the Ray actor did not answer within {wait + ANSWER_S:g} s")
            else:
                self._lose(f"the Ray actor died: {_first_line(e)}")
            # No final reply: the actor runs no CUDA, so losing it is the cluster's failure, not the
            # mutant's (a mutant's crash or hang kills only a child, and comes as `crash`/`timeout`).
            # The driver charges no cell and sends what is left again, to a new actor.

    def _lose(self, why: str) -> None:
        """The actor died or stopped answering: kill it, keep what it measured, replace it at the next task."""
        self.lost.append(why)
        actor, self._actor = self._actor, None
        if actor is not None:
            try:
                self._ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - gone already, or its node is: nothing left to kill
                pass
        self.replaced += 1
        self._gone = {name: self._gone[name] + self._now[name] for name in STATS}
        self._now = _no_stats()

    def retire(self) -> None:
        """As `Worker.retire`: the actor replaces its active child (e.g. its CUDA context is gone)."""
        if self._actor is None:
            return
        try:
            self._now = self._ray.get(self._actor.retire.remote(), timeout=ANSWER_S)
        except self._ray.exceptions.RayError as e:
            self._lose(f"the Ray actor died: {_first_line(e)}")

    def close(self, wait_s: float = 5.0) -> None:
        """As `Worker.close`: the actor's worker closes its children (a busy one killed after
        `wait_s`), then the actor goes and its GPU is Ray's again."""
        self._closed = True
        actor, self._actor = self._actor, None
        if actor is None:
            return
        try:
            self._now = self._ray.get(actor.close.remote(wait_s), timeout=wait_s + ANSWER_S)
        except self._ray.exceptions.RayError:
            pass  # dead already, or too slow to say so: killed below either way
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - gone already
            pass

    def __enter__(self) -> "RayWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
