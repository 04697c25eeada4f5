"""`kbm run` as a library call: fill the kill matrix for chosen problems and inputs.

The parent never touches CUDA. Per problem it compiles the substrate and its distinct mutants
(NVRTC, cached), quarantines mutants that crash or hang on a tiny probe input (`quarantined`),
then sends input-major tasks to a GPU worker and commits every cell it streams back. A crash
costs one worker restart and the task resumes after the culprit; a launch that overruns its
deadline (derived from the correct kernel's time on that input) is killed and recorded as
`timeout`. Cells have a unique key, so a run killed at any moment resumes where it stopped.
"""

from __future__ import annotations

import faulthandler
import hashlib
import multiprocessing as mp
import os
import queue
import signal
import statistics
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator

from kbm_toolkit.analysis.runs import TIME_SPLIT
from kbm_toolkit.errors import KbmError
from kbm_toolkit.vocabulary import STOPPING_OUTCOMES, MutantStatus
from kbm_toolkit.evaluation.first_kill import FirstKill, Settled
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.store import in_sample
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.substrate import Substrate, substrate_for
from kbm_toolkit.evaluation.workers import Worker, WorkerClosed

TARGET = "kbm_toolkit.evaluation.worker_task:evaluate_task"
STOPPING = STOPPING_OUTCOMES
SPARES = 6
"""Warm workers kept ready per GPU: a burst of crashing mutants swaps them in while new ones warm."""
COMPILE_NICENESS = 10
"""How much lower the compile pool's CPU priority is than the workers' (`os.nice`)."""
STOP_DUMP_S = 15.0
"""A stopping run still cleaning up after this long prints every thread's stack to stderr:
the H200 batch's `timeout -k 20` kills it 5 s later, and a stop that overruns is a bug to find."""
PHASE_TIMEOUT_S = 900.0
"""Building an input, the reference and the correct kernel: generous, only a broken box hits it."""


def mutant_deadline_s(correct_ms: float | None) -> float:
    """How long one mutant may run on an input: 50x the correct kernel, at least 5 s (+2 s load)."""
    return max(5.0, 50.0 * (correct_ms or 0.0) / 1000.0) + 2.0


@dataclass
class ProblemPlan:
    """Everything one worker task needs for a problem, built on the parent side."""

    problem: Problem
    substrate: Substrate
    substrate_hash: str
    original: dict[str, Any]
    mutants: list[dict[str, Any]]
    probe: InputSpec | None
    specs: list[InputSpec]


@dataclass
class RunSummary:
    cells: int = 0
    restarts: int = 0
    waited_s: float = 0.0
    """Time the GPU workers spent waiting for a child to finish starting (no warm spare left)."""
    spares: dict[str, Any] = field(default_factory=dict)
    """How the workers' children started: how many, how many were warm when put to work, the
    median and slowest seconds from spawn to warm (too few spares, or too slow to warm), and the
    median of each part of the warm-up (`spare_stats`)."""
    quarantined: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    """Where the workers' time went (`TIME_SPLIT` keys, in worker-seconds), as the run stores it."""


_RECORD_MS = {"cell": {"ms": "launches", "load_ms": "loading", "check_ms": "comparing"},
              "input": {"build_ms": "building", "ref_ms": "references", "kernel_ms": "correct"},
              "rebuilt": {"build_ms": "building", "ref_ms": "references"}}


def probe_spec(problem: Problem, substrate: Substrate) -> InputSpec:
    """A tiny input: the smallest shape the substrate declares for its gate, else the official one."""
    shapes = sorted(substrate.gate_shapes, key=lambda s: sum(v for v in s.values() if isinstance(v, int)))
    from kbm_toolkit.problems.seeds import trial_seeds

    seed = trial_seeds(1)[0]
    return InputSpec.make(problem.key, seed, shape=shapes[0] if shapes else None, label="probe")


def stored_mutants(store: Any, problem: Problem, sample: float | None = None
                   ) -> tuple[Substrate, str, dict[str, dict[str, Any]]]:
    """The substrate, its hash, and the stored mutants an evaluation runs (distinct or quarantined),
    only those in the `sample` share when one is given."""
    substrate = substrate_for(problem)
    sh = substrate.content_hash
    current = [r for r in store.mutants(problem.key) if r["substrate_hash"] == sh]
    rows = {r["id"]: r for r in current if r["status"] in (MutantStatus.DISTINCT, MutantStatus.QUARANTINED) and in_sample(r["id"], sample)}
    if not rows and (sample is None or not current):
        raise KbmError(f"no mutants of {problem.key} at its current source: run `kbm mutate {problem.key}` first")
    return substrate, sh, rows


def plan_problem(problem: Problem, substrate: Substrate, sh: str, rows: dict[str, dict[str, Any]],
                 specs: list[InputSpec], arch: str, probe: bool, rules: list[Any] | None = None) -> ProblemPlan:
    """Compile the substrate (hash `sh`) and the mutants in `rows` (NVRTC, cached)."""
    original = compile_source(substrate.source, arch, where=str(substrate.kernel_path))
    chosen = [m for m in generate(substrate, rules if rules is not None else load_rules()) if m.id in rows] if rows else []
    mutants = []
    for m in chosen:
        image = compile_source(m.kernel_source, arch) if m.target == "kernel" else original
        mutants.append({"id": m.id, "status": rows[m.id]["status"], "image": asdict(image),
                        "kernel_source": m.kernel_source,
                        "launcher_source": m.launcher_source if m.target == "launcher" else None})
    return ProblemPlan(problem, substrate, sh, asdict(original), mutants,
                       probe_spec(problem, substrate) if probe else None, specs)


def _complete(mutants: Iterable[str], specs: list[InputSpec], done: set[tuple[str, str]],
              checked: dict[str, Any]) -> bool:
    """Whether every pair of `mutants` (ids) and `specs` is done and every input is checked."""
    return all(s.id in checked for s in specs) and all((m, s.id) in done for m in mutants for s in specs)


def _drive(worker: Worker, plan: ProblemPlan, specs: list[InputSpec], mutants: list[dict[str, Any]],
           done: set[tuple[str, str]], checked: dict[str, dict[str, Any] | None],
           emit: Callable[[dict[str, Any]], None],
           deadline: Callable[[float | None], float], rerun_crashers: bool = False,
           settled: Settled | None = None) -> str:
    """Run one problem's pairs to completion on `worker`, restarting it as needed; return a verdict.

    A mutant that crashes or hangs on an input is not run on the rest (`rerun_crashers` does):
    the crash already kills it at every tolerance, and each further crash would cost a restart.
    With `settled` (`--first-kill`), a pair its rule no longer needs counts as done: the worker
    skips the same pairs by the same rule. There a crash settles only its own input's protocols,
    like any detection, so the others still get their cells (at most one restart each).
    `checked` holds each checked input's correct-kernel margin and time (None: invalid); the
    worker does not run the correct kernel again on a valid one.
    """
    def take(cell: dict[str, Any]) -> None:
        m = cell["mutant"]
        done.add((m, cell["input"]))
        if settled is not None:
            settled.cell(m, cell["input"], cell["outcome"], cell.get("margin"))
            done.update((m, s.id) for s in specs if not settled.needed(m, s.id))
        elif cell["outcome"] in STOPPING and not rerun_crashers:
            done.update((m, s.id) for s in specs)
        emit(cell)

    stuck = 0
    while True:
        if _complete([m["id"] for m in mutants], specs, done, checked):
            return "done"
        task = {"problem": plan.problem.record(),
                "substrate": str(plan.substrate.folder), "original": plan.original,
                "specs": [s.record() for s in specs],
                "mutants": [{k: m[k] for k in ("id", "image", "kernel_source", "launcher_source")} for m in mutants],
                "done": sorted(done), "checked": sorted(checked), "rerun_crashers": rerun_crashers,
                "valid": {i: c["margin"] for i, c in checked.items() if c is not None},
                "first_kill": settled.rule.record() if settled else None}
        current: dict[str, Any] = {}
        progressed = False

        def lost() -> None:  # the launch in `current` crashed or hung: its time until then
            emit({"kind": "time", "part": "crashed", "s": time.monotonic() - current["at"]})

        def timeout() -> float:
            return deadline((checked.get(current["input"]) or {}).get("kernel_ms")) if current else PHASE_TIMEOUT_S

        for reply in worker.stream(task, timeout):
            if reply.status == "item":
                rec = reply.value
                if rec["kind"] == "input":
                    checked[rec["input"]] = ({"margin": rec["margin"], "kernel_ms": rec.get("kernel_ms")}
                                             if rec["valid"] else None)
                    if not rec["valid"]:
                        done.update((m["id"], rec["input"]) for m in mutants)
                    elif settled is not None:
                        settled.check(rec["input"], rec["margin"])
                    emit(rec)
                    progressed = True
                elif rec["kind"] == "rebuilt":  # a valid input built again: only its time is news
                    emit(rec)
                elif rec["kind"] == "start":
                    current = {**rec, "at": time.monotonic()}
                elif rec["kind"] == "cell":
                    if "ms" not in rec and current:
                        lost()
                    take(rec)
                    current = {}
                    progressed = True
                elif rec["kind"] == "poisoned":
                    worker.retire()  # its CUDA context is gone; a warm spare takes over
                    break
            elif reply.status == "ok":
                break
            elif reply.status == "error":
                return f"error: {reply.message.splitlines()[0] if reply.message else 'unknown'}"
            else:  # crash or timeout of the worker itself
                if current:
                    lost()
                    take({"kind": "cell", "mutant": current["mutant"], "input": current["input"],
                          "outcome": reply.status, "note": reply.message})
                    progressed = True
                break
        stuck = 0 if progressed else stuck + 1
        if stuck >= 2:
            return "error: the worker fails before any mutant runs (reference or correct kernel)"


def run_problem(worker: Worker, store_view: dict[str, Any], plan: ProblemPlan,
                emit: Callable[[dict[str, Any]], None],
                deadline: Callable[[float | None], float] = mutant_deadline_s, rerun_crashers: bool = False) -> str:
    """Probe phase, then the full input set, for one problem."""
    done, checked = set(store_view["done"]), dict(store_view["checked"])
    if not rerun_crashers:  # a crashed mutant stays stopped (see _drive)
        done |= {(m, s.id) for m in store_view["crashed"] for s in plan.specs}
    mutants = [m for m in plan.mutants if m["status"] == MutantStatus.DISTINCT]
    if plan.probe is not None:
        probed: list[dict[str, Any]] = []

        def probe_emit(rec: dict[str, Any]) -> None:
            probed.append(rec)
            emit(rec)

        verdict = _drive(worker, plan, [plan.probe], mutants, done, checked, probe_emit, deadline)
        if verdict != "done":
            return verdict
        crashers = {r["mutant"] for r in probed if r["kind"] == "cell" and r["outcome"] in ("crash", "timeout")}
        # quarantine what a killed run left undone (quarantined mutants are not among `mutants`)
        crashers |= store_view["probe_crashes"] & {m["id"] for m in mutants}
        for m in crashers:
            emit({"kind": "quarantine", "mutant": m})
        mutants = [m for m in mutants if m["id"] not in crashers]
    return _drive(worker, plan, plan.specs, mutants, done, checked, emit, deadline, rerun_crashers,
                  store_view.get("settled"))


def _to_run(view: dict[str, Any], rows: dict[str, dict[str, Any]], specs: list[InputSpec],
            probe_input: InputSpec | None, rerun_crashers: bool) -> dict[str, dict[str, Any]]:
    """The distinct mutants of `rows` that `run_problem` has work for: a cell the store lacks,
    or a crash on the probe still to quarantine. Only these are compiled and sent to a worker.

    A run at a wider share compiled, and sent with each task, every mutant its narrower runs had
    finished (nine in ten of them at the last tenth); a resumed run, every problem it had finished
    (its workers then waited on compiles for 57% of their time).
    """
    done, left = view["done"], {}
    for m, row in rows.items():
        if row["status"] != MutantStatus.DISTINCT:
            continue  # quarantined on the probe: never run again
        if probe_input is not None and ((m, probe_input.id) not in done or m in view["probe_crashes"]):
            left[m] = row
        elif (rerun_crashers or m not in view["crashed"]) and any((m, s.id) not in done for s in specs):
            left[m] = row
    return left


def _stopped_on(store: Any, specs: list[InputSpec]) -> set[str]:
    """Mutants with a stored crash or timeout on one of `specs` (input ids name their problem).

    On this run's inputs: a mutant that crashed only on other inputs runs here, since a protocol
    made of these inputs has not seen its crash and needs its cells. On the probe: mutants a
    killed run left unquarantined."""
    return store.stopped_on([s.id for s in specs], STOPPING)


def run_evaluation(store: Any, problems: list[Problem], specs_for: Callable[[Problem], list[InputSpec]],
                   source: str, arch: str, env: dict[str, Any], gpus: int = 1, probe: bool = True,
                   target: str = TARGET, on_progress: Callable[[int, int], None] | None = None,
                   on_problem: Callable[[str, str], None] | None = None, rules: list[Any] | None = None,
                   deadline: Callable[[float | None], float] = mutant_deadline_s,
                   workers_per_gpu: int = 1, sample: float | None = None, rerun_crashers: bool = False,
                   only: dict[str, set[str]] | None = None, checks_only: bool = False,
                   first_kill: list[Any] | None = None) -> RunSummary:
    """Fill the kill matrix: every distinct mutant of `problems` on every input from `specs_for`.

    With `sample`, only that deterministic share of each problem's mutants (`store.in_sample`);
    the store records the share, and scores are over it. Problems run in an order fixed by a hash
    of their keys, so a run stopped early has covered a random subset of problems, not the first
    level's matmuls. A mutant that crashes or hangs on an input is not run on the others unless
    `rerun_crashers`. `only` (problem -> mutant ids) narrows the mutants further, e.g. to those
    a protocol misses. `checks_only` runs no mutant at all, only each input's validity check (the
    reference and the correct kernel): how `kbm targets` locates validity ceilings. With
    `first_kill` (the protocols whose inputs `specs_for` gives), a mutant stops getting a
    protocol's inputs once that protocol detects it (`first_kill.FirstKill`); the store then
    records that the newly evaluated mutants lack full rows.

    With `workers_per_gpu` > 1, several workers share each GPU, each on its own problems, so
    one worker's restart after a crashing mutant leaves the GPU busy with the others.

    What the store knows is read first (cheap); compiling is pipelined with the GPU: a process
    pool compiles problems ahead of the workers, in run order, each problem in one process.
    """
    # how many workers ran at once: time inside launches is a share of workers x wall time
    run_id = store.start_run("check" if checks_only else "evaluate", {**env, "workers": gpus * workers_per_gpu})
    probe = probe and not checks_only
    summary = RunSummary()
    views, hashes, jobs, total = {}, {}, [], 0
    results: queue.Queue = queue.Queue()
    for problem in sorted(problems, key=lambda p: hashlib.sha256(p.key.encode()).hexdigest()):
        specs = specs_for(problem)
        if checks_only:
            substrate = substrate_for(problem)
            sh, rows = substrate.content_hash, {}
        else:
            substrate, sh, rows = stored_mutants(store, problem, sample)
            if only is not None:
                rows = {m: r for m, r in rows.items() if m in only.get(problem.key, ())}
        probe_input = probe_spec(problem, substrate) if probe else None
        store.record_problem(problem)
        if not checks_only:
            # a problem new to the store: 0% evaluated until it is done; a known one keeps both its shares
            store.widen_sample(problem.key, 0.0, full_rows=False)
            if not rows:  # a small problem whose sample drew none of its mutants, or none is left
                store.widen_sample(problem.key, sample, full_rows=not first_kill)
                summary.problems[problem.key] = "done"
                continue
        inputs = specs + ([probe_input] if probe_input else [])
        store.record_inputs(inputs, source)
        stored = {pair: cell for pair, cell in store.problem_cells(problem.key).items() if pair[0] in rows}
        done = set(stored)
        checks = store.checked_inputs(problem.key, sh)
        invalid = {i for i, c in checks.items() if not c["valid"]}
        done |= {(m, i) for m in rows for i in invalid}
        settled = None
        if first_kill and not checks_only:  # what stored cells already settle is not asked for again
            settled = Settled(FirstKill.of(first_kill, problem),
                              {i: c["margin"] for i, c in checks.items() if c["valid"]})
            for (m, i), (outcome, margin) in stored.items():
                settled.cell(m, i, outcome, margin)
            done |= {(m, s.id) for m in settled.by_mutant for s in specs if not settled.needed(m, s.id)}
        views[problem.key] = {"done": done, "settled": settled,
                              "checked": {i: {"margin": c["margin"], "kernel_ms": c["kernel_ms"]} if c["valid"] else None
                                          for i, c in checks.items()},
                              "probe_crashes": _stopped_on(store, [probe_input] if probe_input else []),
                              # under --first-kill a stored crash settles its protocols like any detection
                              "crashed": set() if settled else _stopped_on(store, specs)}
        total += sum(r["status"] == MutantStatus.DISTINCT for r in rows.values()) * (len(specs) + (1 if probe else 0))
        hashes[problem.key] = sh
        left = _to_run(views[problem.key], rows, specs, probe_input, rerun_crashers)
        if not left and all(s.id in views[problem.key]["checked"] for s in inputs):
            results.put((problem.key, {"kind": "problem", "verdict": "done"}))  # recorded as if run
        else:  # only the mutants with work left are compiled and sent to a worker
            jobs.append((problem, substrate, sh, left, specs))
    already = sum(len(v["done"]) for v in views.values())
    work: queue.Queue = queue.Queue()
    warm = "kbm_toolkit.evaluation.worker_task:warm_up" if target == TARGET else None
    workers = [Worker(target, {"CUDA_VISIBLE_DEVICES": str(i % gpus)} if gpus > 1 else {}, warm=warm,
                      spares=max(2, SPARES // workers_per_gpu))
               for i in range(gpus * workers_per_gpu)]

    # each process plans whole problems, several problems ahead of the GPU in run order: one
    # problem's mutants alone (a few dozen in a sampled run) left most of the pool idle
    size = max(1, min(len(jobs), (os.cpu_count() or 2) - len(workers) - 2))
    pool = compile_pool(size)

    stop = threading.Event()  # set by SIGINT, or when the run ends early for any reason

    def planner() -> None:
        try:
            queued = iter(jobs)
            ahead: deque[tuple[Problem, Future]] = deque()

            def submit() -> None:
                job = next(queued, None)
                if job is not None and not stop.is_set():
                    ahead.append((job[0], pool.submit(plan_problem, *job, arch, probe, rules)))

            for _ in range(2 * size):
                submit()
            while ahead:
                problem, planned = ahead.popleft()
                submit()
                try:
                    work.put(planned.result())
                except Exception as e:  # e.g. a substrate edited since it was mutated: skip that problem
                    why = e.line() if isinstance(e, KbmError) else f"{type(e).__name__}: {e}"
                    results.put((problem.key, {"kind": "problem", "verdict": f"error: {why}"}))
        except RuntimeError:  # submitting to the pool the stopped run has just abandoned
            if not stop.is_set():
                raise
        finally:
            for _ in workers:
                work.put(None)

    finished: list[float] = []  # when each worker found no problem left

    def drive(worker: Worker) -> None:
        while True:
            asked = time.monotonic()
            plan = work.get()
            if plan is None:
                finished.append(time.monotonic())
                return
            results.put((plan.problem.key, {"kind": "time", "part": "planning", "s": time.monotonic() - asked}))
            try:
                verdict = run_problem(worker, views[plan.problem.key], plan,
                                      lambda rec, key=plan.problem.key: results.put((key, rec)), deadline, rerun_crashers)
            except WorkerClosed:  # the run stopped (Ctrl-C, a time limit) and closed its workers
                return
            results.put((plan.problem.key, {"kind": "problem", "verdict": verdict}))

    threads = [threading.Thread(target=planner, daemon=True)]
    threads += [threading.Thread(target=drive, args=(w,), daemon=True) for w in workers]
    batch: list[dict[str, Any]] = []

    def flush() -> None:  # commit the cells received so far
        store.record_cells(run_id, batch)
        summary.cells += len(batch)
        batch.clear()

    count = already
    seconds = dict.fromkeys(TIME_SPLIT, 0.0)
    completed = False
    with _sigint_sets(stop):
        for t in threads:
            t.start()
        began = time.monotonic()
        last_flush = time.monotonic()
        try:
            while any(t.is_alive() for t in threads) or not results.empty():
                if stop.is_set():
                    raise KeyboardInterrupt
                try:
                    key, rec = results.get(timeout=0.5)
                except queue.Empty:
                    key, rec = None, None
                if rec is not None:
                    kind = rec["kind"]
                    for name, part in _RECORD_MS.get(kind, {}).items():
                        seconds[part] += (rec.get(name) or 0.0) / 1000
                    if kind == "time":
                        seconds[rec["part"]] += rec["s"]
                    elif kind == "cell":
                        batch.append(rec)
                        count += 1
                    elif kind == "input":
                        store.record_input_check(hashes[key], run_id, rec)
                    elif kind == "quarantine":
                        flush()
                        store.set_mutant_status(rec["mutant"], MutantStatus.QUARANTINED, "crashed or hung on the probe input")
                        summary.quarantined.append(rec["mutant"])
                    elif kind == "problem":
                        summary.problems[key] = rec["verdict"]
                        if rec["verdict"] == "done" and not checks_only:
                            # the share widens only once every cell it needs is stored: an interrupted
                            # run leaves the problem scored on the share it had finished before
                            flush()
                            store.widen_sample(key, sample, full_rows=not first_kill)
                        if on_problem:
                            on_problem(key, rec["verdict"])
                if batch and (len(batch) >= 256 or time.monotonic() - last_flush > 1.0 or rec is None):
                    flush()
                    last_flush = time.monotonic()
                if on_progress:
                    on_progress(count, total)
            completed = True
        finally:
            if not completed:
                faulthandler.dump_traceback_later(STOP_DUMP_S)
            flush()
            summary.restarts = sum(w.restarts for w in workers)
            summary.waited_s = sum(w.waited_s for w in workers)
            summary.spares = spare_stats(workers)
            summary.seconds = _split(seconds, summary, began, finished, len(workers))
            stats = {"seconds": summary.seconds, "restarts": summary.restarts, "spares": summary.spares}
            if not completed:  # interrupted: its cells are kept, and when it stopped gives its wall time;
                # first, as closing a worker busy in a long launch can outlast a kill's grace
                store.stop_run(run_id, stats)
                stop.set()
                _abandon(pool)
            closing = [threading.Thread(target=w.close) for w in workers]  # together: each may wait on a busy child
            for t in closing:
                t.start()
            for t in closing:
                t.join()
            pool.shutdown()
            faulthandler.cancel_dump_traceback_later()
    store.finish_run(run_id, stats)
    return summary


def spare_stats(workers: list[Worker]) -> dict[str, Any]:
    """Children started by `workers`, how many were warm when put to work, how many spares died
    unused, the warm-up times, and each part of the warm-up's median."""
    warm = sorted(t for w in workers for t in w.warm_s)
    parts: dict[str, list[float]] = {}
    for w in workers:
        for child in w.warm_parts:
            for part, s in child.items():
                parts.setdefault(part, []).append(s)
    return {"starts": len(warm), "found_warm": sum(w.found_warm for w in workers),
            "lost": sum(w.spares_lost for w in workers),
            "warm_s_median": round(statistics.median(warm), 2) if warm else None,
            "warm_s_max": round(warm[-1], 2) if warm else None,
            "warm_parts_median": {part: round(statistics.median(v), 2) for part, v in parts.items()}}


@contextmanager
def _sigint_sets(flag: threading.Event) -> Iterator[None]:
    """While inside, SIGINT (Ctrl-C, `timeout -s INT`) only sets `flag`, for the run to stop where it checks.

    Raised as KeyboardInterrupt at any bytecode, one once landed inside a queue's lock: the run
    ended in an internal error instead of its clean stop. A second one, inside the clean-up,
    would cut that short too. (Only the main thread may set a handler; elsewhere nothing changes.)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: flag.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _abandon(pool: ProcessPoolExecutor) -> None:
    """Stop a compile pool now: cancel what is queued and end the compiles under way.

    Python waits at exit for a pool's running tasks, and compiling a whole problem can outlast
    the grace `timeout -k` gives a stopped run; its plans are worth nothing to a run that stopped.
    """
    processes = list((pool._processes or {}).values())  # no public way to end running tasks before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


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


def _split(seconds: dict[str, float], summary: RunSummary, began: float, finished: list[float],
           workers: int) -> dict[str, float]:
    """The run's worker time by `TIME_SPLIT` part, with `wall` (workers x wall time since `began`) and `other`."""
    end = time.monotonic()
    parts = {**seconds, "spares": summary.waited_s, "tail": sum(end - f for f in finished)}
    parts["wall"] = (end - began) * workers
    parts["other"] = parts["wall"] - sum(v for k, v in parts.items() if k != "wall")
    return {k: round(v, 3) for k, v in parts.items()}
