"""`kbm run` as a library call: fill the kill matrix for chosen problems and inputs.

The parent never touches CUDA. Per problem it compiles the substrate and its distinct mutants
(NVRTC, cached), quarantines mutants that crash or hang on a tiny probe input (`quarantined`),
then sends input-major tasks to a GPU worker and commits every cell it streams back. A crash
costs one worker restart and the task resumes after the culprit; a launch that overruns its
deadline (derived from the correct kernel's time on that input) is killed and recorded as
`timeout`. Cells have a unique key, so a run killed at any moment resumes where it stopped.

Here the orchestration; `plan` reads the store and compiles, `driver` drives one problem on a
worker, `collect` commits what the workers stream back, and `cell_task` is the GPU side.
"""

from __future__ import annotations

import faulthandler
import os
import queue
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Iterator

from kbm_toolkit.cuda.redzone import configured as configured_redzones
from kbm_toolkit.errors import one_line
from kbm_toolkit.evaluation.collect import Collector
from kbm_toolkit.evaluation.compiling import abandon, compile_pool
from kbm_toolkit.evaluation.driver import ProblemRun
from kbm_toolkit.evaluation.options import CELL_PREPARE, CELL_TASK, CELL_WARM_UP, GPU_PRELOAD, RunOptions
from kbm_toolkit.evaluation.plan import (Job, StoredProgress, mutants_with_work, plan_parts, plans_ahead,
                                         probe_spec, stored_mutants, stored_progress)
from kbm_toolkit.evaluation.shard import run_order
from kbm_toolkit.evaluation.stats import RunSummary, spare_stats, split_seconds
from kbm_toolkit.evaluation.workers import Worker, WorkerClosed, start_server
from kbm_toolkit.judging import extra_margins
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import Substrate, substrate_for
from kbm_toolkit.protocols.registry import all_protocols
from kbm_toolkit.vocabulary import MutantStatus, RecordKind, RunKind

SPARES = 6
"""Warm workers kept ready per GPU: a burst of crashing mutants swaps them in while new ones warm.
Not more: on the eval bench's slice with two workers (H200, 2026-12-02), six each instead of three
doubled a spare's context creation (median 1.07 s to 1.96 s), took cells/s from 63.5 to 48.2, and
four of the ten problems ended in `unspecified launch failure`."""
STANDBYS = 1
"""Spares per worker that build ahead the input it is on (`Worker.prepare`). On the eval bench's
slice (H200, 2026-12-02) one gave 62.1 cells/s and two 58.5: each more builds every input again,
on the same GPU, and a problem's crashers crash on its probe faster than either spare builds it."""
STOP_DUMP_S = 15.0
"""A stopping run still cleaning up after this long prints every thread's stack to stderr:
the H200 batch's `timeout -k 20` kills it 5 s later, and a stop that overruns is a bug to find."""


def spares_per_worker(options: RunOptions) -> int:
    """Warm children each worker keeps: `--spares`, else SPARES per GPU shared among its workers (at least 2)."""
    return options.spares if options.spares is not None else max(2, SPARES // options.workers_per_gpu)


def run_evaluation(store: Any, problems: list[Problem], specs_for: Callable[[Problem], list[InputSpec]],
                   source: str, arch: str, env: dict[str, Any], options: RunOptions | None = None) -> RunSummary:
    """Fill the kill matrix: every distinct mutant of `problems` on every input from `specs_for`,
    as `options` say (`RunOptions`: a sample, only some mutants, first kill, checks only, workers).

    Problems run in an order fixed by a hash of their keys, so a run stopped early has covered a
    random subset of problems, not the first level's matmuls. A mutant that crashes or hangs on an
    input is not run on the others unless `options.rerun_crashers`.

    What the store knows is read first (cheap); compiling is pipelined with the GPU: a process
    pool compiles problems ahead of the workers, in run order, each in parts of a few mutants
    spread over the pool (`plan.plans_ahead`).
    """
    options = options or RunOptions()
    if options.margins is None:  # what every installed protocol's judging needs, in every new cell
        options = replace(options, margins=extra_margins([p.judge for p in all_protocols()]))
    if options.shard is not None:  # one part of a run a batch scheduler spreads (`shard.Shard`), and said so
        problems, env = options.shard.of(problems), {**env, "shard": str(options.shard)}
    if configured_redzones():  # an experiment's switch (`cuda.redzone`): the run says so
        env = {**env, "redzones": True}
    # how many workers ran at once: time inside launches is a share of workers x wall time
    run_id = store.start_run(RunKind.CHECK if options.checks_only else RunKind.EVALUATE,
                             {**env, "workers": options.gpus * options.workers_per_gpu,
                              "spares_per_worker": spares_per_worker(options)})
    run = _Run(store, run_id, arch, options)
    if options.target == CELL_TASK and options.ray is None and not options.dry_run:
        start_server(GPU_PRELOAD)  # it imports torch while the store is read
    for problem in sorted(problems, key=lambda p: run_order(p.key)):
        run.survey(problem, specs_for(problem), source)
    if options.dry_run:
        return run.summary
    stats = run.go()
    store.finish_run(run_id, stats)
    return run.summary


def _count_plan(planned: dict[str, int], progress: StoredProgress, left: dict[str, Any],
                inputs: list[InputSpec], waiting: int) -> None:
    """Add one problem's work to a dry run's count: cells on checked valid inputs, and on the inputs
    still to check, whose cells come only where the check passes (at most so many; on an input
    checked again, also those of the `waiting` mutants not compiled for it)."""
    unchecked = [s for s in inputs if s.id not in progress.checked]
    valid = [s for s in inputs if progress.checked.get(s.id) is not None]
    cells = sum((m, s.id) not in progress.done for m in left for s in valid)
    later = sum((m, s.id) not in progress.done for m in left for s in unchecked)
    later += waiting * sum(s.id in progress.rechecking for s in unchecked)
    for key, n in (("problems", bool(left or unchecked)), ("mutants", len(left)), ("cells", cells),
                   ("unchecked", len(unchecked)), ("cells_unchecked", later)):
        planned[key] = planned.get(key, 0) + n


class _Run:
    """One `run_evaluation` under way: what the store says is left, then the threads that do it.

    A planner thread keeps the compile pool a few problems ahead and hands each plan on; one
    thread per worker drives the plans on its worker; the main thread commits what they all
    report (`Collector`) and, on SIGINT or any error, stops them and closes everything."""

    def __init__(self, store: Any, run_id: int, arch: str, options: RunOptions) -> None:
        self.store, self.run_id, self.arch, self.options = store, run_id, arch, options
        self.probe = options.probe and not options.checks_only and options.redo is None
        self.summary = RunSummary()
        self.progress: dict[str, StoredProgress] = {}
        self.hashes: dict[str, str] = {}
        """Problem -> its substrate's hash."""
        self.given: dict[str, set[str]] = {}
        """Problem -> the ids of the inputs this run gives its mutants (whether it fills full rows)."""
        self.waiting: dict[str, tuple[set[str], int]] = {}
        """Problem -> the inputs it checks again (their reference raised), and how many mutants are
        not compiled for them: should one pass now, the problem is not done (`Collector`)."""
        self.jobs: list[Job] = []
        """The problems with work left, in run order, for the compile pool."""
        self.total = 0
        """Cells of every distinct mutant on every input, stored or not: what progress counts to."""
        self.results: queue.Queue = queue.Queue()
        """(problem, record) pairs from every thread, for the main thread to commit."""
        self.work: queue.Queue = queue.Queue()
        """Plans for the workers' threads; a None for each when no problem is left."""
        self.stop = threading.Event()  # set by SIGINT, or when the run ends early for any reason
        self.finished: list[float] = []  # when each worker found no problem left
        self.workers: list[Worker] = []
        self.crowded: list[ProblemRun] = []
        """Problems some of whose inputs did not fit in GPU memory beside the other workers': the
        last worker to find no problem left resumes them, the others closed."""
        self.idle = 0
        """Workers that have found no problem left."""
        self.lock = threading.Lock()  # guards `crowded` and `idle`

    def survey(self, problem: Problem, specs: list[InputSpec], source: str) -> None:
        """Read what the store knows of `problem` on `specs`; queue it for compiling if work is left."""
        store, options = self.store, self.options
        substrate, sh, rows = self._mutants_of(problem)
        probe_input = probe_spec(problem, substrate) if self.probe else None
        store.record_problem(problem)
        inputs = specs + ([probe_input] if probe_input else [])
        self.given[problem.key] = {s.id for s in inputs}
        if options.widens_share():
            # a problem new to the store: 0% evaluated until it is done; a known one keeps both its shares
            store.widen_sample(problem.key, 0.0, full_rows=False)
            if not rows:  # a small problem whose sample drew none of its mutants, or none is left
                store.widen_sample(problem.key, options.sample, full_rows=not options.first_kill,
                                   inputs=self.given[problem.key])
                self.summary.problems[problem.key] = "done"
                return
        store.record_inputs(inputs, source)
        progress = stored_progress(store, problem, sh, rows, specs, probe_input,
                                   None if options.checks_only else options.first_kill, options.margins,
                                   options.witness_tolerances)
        if options.redo is not None:  # only the pairs to measure again, crashed on before or not
            again = options.redo.get(problem.key, set())
            progress = replace(progress, done={(m, s.id) for m in rows for s in specs} - again, crashed=set())
        self.progress[problem.key], self.hashes[problem.key] = progress, sh
        distinct = sum(r["status"] == MutantStatus.DISTINCT for r in rows.values())
        self.total += distinct * (len(specs) + (1 if self.probe else 0))
        left = mutants_with_work(progress, rows, specs, probe_input, options.rerun_crashers)
        waiting = {m for m, r in rows.items() if m not in left and r["status"] == MutantStatus.DISTINCT
                   and (options.rerun_crashers or m not in progress.crashed)
                   and any((m, i) not in progress.done for i in progress.rechecking)}
        if waiting:  # their cells on an input that passes its check again come with the next run
            self.waiting[problem.key] = (progress.rechecking, len(waiting))
        if options.dry_run:
            _count_plan(self.summary.planned, progress, left, inputs, len(waiting))
            return
        if not left and all(s.id in progress.checked for s in inputs) and not progress.recheck:
            self.results.put((problem.key, {"kind": RecordKind.PROBLEM, "verdict": "done"}))  # recorded as if run
        else:  # only the mutants with work left are compiled and sent to a worker
            self.jobs.append(Job(problem, substrate, sh, left, specs))

    def _mutants_of(self, problem: Problem) -> tuple[Substrate, str, dict[str, dict[str, Any]]]:
        """The substrate, its hash, and the stored mutants this run evaluates (none: checks only)."""
        if self.options.checks_only:
            substrate = substrate_for(problem)
            return substrate, substrate.content_hash, {}
        substrate, sh, rows = stored_mutants(self.store, problem, self.options.sample)
        if self.options.only is not None:
            rows = {m: r for m, r in rows.items() if m in self.options.only.get(problem.key, ())}
        if self.options.redo is not None:  # only the mutants with a pair to measure again
            again = {m for m, _ in self.options.redo.get(problem.key, ())}
            rows = {m: r for m, r in rows.items() if m in again}
        return substrate, sh, rows

    def go(self) -> dict[str, Any]:
        """Start the workers, the compile pool and the threads, and commit what they report until
        the run is done; return its stats. On SIGINT or an error it stops cleanly, then re-raises."""
        options = self.options
        warm = CELL_WARM_UP if options.target == CELL_TASK else None
        spares = spares_per_worker(options)
        if options.ray is not None:  # the same workers, each in a Ray actor on a GPU of the cluster
            from kbm_toolkit.evaluation.ray_backend import ray_workers

            self.workers = ray_workers(options, warm, spares)
        else:
            self.workers = [Worker(options.target, {"CUDA_VISIBLE_DEVICES": str(i % options.gpus)}
                                   if options.gpus > 1 else {}, warm=warm, spares=spares,
                                   preload=GPU_PRELOAD if warm else (), prepare=CELL_PREPARE if warm else None,
                                   standbys=STANDBYS)
                            for i in range(options.gpus * options.workers_per_gpu)]
            for worker in self.workers:  # a burst of crashes in one draws on its GPU's other warm spares
                worker.share_spares(self.workers)
        # the pool plans parts of problems, several ahead of the GPU in run order: one problem's
        # mutants alone (a few dozen in a sampled run) left most of the pool idle
        local = 0 if options.ray is not None else len(self.workers)  # Ray's workers use the cluster's CPUs
        parts = sum(len(plan_parts(len(job.mutants))) for job in self.jobs)
        size = max(1, min(parts, (os.cpu_count() or 2) - local - 2))
        pool = compile_pool(size)
        threads = [threading.Thread(target=self._plan_ahead, args=(pool, size), daemon=True)]
        threads += [threading.Thread(target=self._serve, args=(w,), daemon=True) for w in self.workers]
        already = sum(len(p.done) for p in self.progress.values())
        collector = Collector(self.store, self.run_id, self.summary, options, self.hashes, self.given, already,
                              self.waiting)
        completed = False
        with sigint_sets(self.stop):
            for t in threads:
                t.start()
            began = time.monotonic()
            try:
                collector.follow(self.results, threads, self.stop, self.total)
                completed = True
            finally:
                stats = self._close(pool, collector, began, completed)
        return stats

    def _plan_ahead(self, pool: ProcessPoolExecutor, size: int) -> None:
        """The planner's thread: keep `2 * size` parts of problems compiling ahead of the workers,
        in run order, and hand each plan on; a problem that cannot be planned gets an error verdict."""
        options = self.options
        try:
            for job, plan in plans_ahead(pool, self.jobs, 2 * size, (self.arch, self.probe, options.rules,
                                                                      options.margins), stopped=self.stop.is_set):
                if isinstance(plan, Exception):  # e.g. a substrate edited since it was mutated: skip that problem
                    verdict = f"error: {one_line(plan)}"
                    self.results.put((job.problem.key, {"kind": RecordKind.PROBLEM, "verdict": verdict}))
                else:
                    self.work.put(plan)
        except RuntimeError:  # submitting to the pool the stopped run has just abandoned
            if not self.stop.is_set():
                raise
        finally:
            for _ in self.workers:
                self.work.put(None)

    def _serve(self, worker: Worker) -> None:
        """A worker's thread: drive each plan handed on on `worker`, until none is left or the run stops."""
        worker.prestart()  # its children warm while the first problem compiles
        options = self.options
        while True:
            asked = time.monotonic()
            plan = self.work.get()
            if plan is None:
                self._resume_crowded(worker)
                self.finished.append(time.monotonic())
                return
            key = plan.problem.key
            self.results.put((key, {"kind": RecordKind.TIME, "part": "planning", "s": time.monotonic() - asked}))
            problem = ProblemRun(self.progress[key], plan, lambda rec, key=key: self.results.put((key, rec)),
                                 options.deadline, options.rerun_crashers)
            try:
                verdict = problem.verdict(worker)
            except WorkerClosed:  # the run stopped (Ctrl-C, a time limit) and closed its workers
                return
            if problem.short_of_memory and options.workers_per_gpu > 1:
                with self.lock:  # its other inputs' cells are in; these wait for a GPU to itself
                    self.crowded.append(problem)
                verdict = f"waiting: {problem.short_of_memory} of its inputs did not fit in GPU memory beside " \
                          "the other workers'; tried again alone once they finish"
            self.results.put((key, {"kind": RecordKind.PROBLEM, "verdict": verdict}))

    def _resume_crowded(self, worker: Worker) -> None:
        """If `worker` is the last to find no problem left, close the others, so that their
        children hand back their GPU memory, and resume the problems whose inputs did not fit."""
        with self.lock:
            self.idle += 1
            if self.idle < len(self.workers) or not self.crowded:
                return
        for other in self.workers:
            if other is not worker:
                other.close()
        while self.crowded and not self.stop.is_set():
            problem = self.crowded.pop(0)
            try:
                verdict = problem.again(worker)
            except WorkerClosed:
                return
            self.results.put((problem.plan.problem.key, {"kind": RecordKind.PROBLEM, "verdict": verdict}))

    def _close(self, pool: ProcessPoolExecutor, collector: Collector, began: float, completed: bool) -> dict[str, Any]:
        """Commit what is left, close the workers and the pool, and return the run's stats; a run
        that did not complete is first recorded as stopped, and its threads told to stop."""
        if not completed:
            faulthandler.dump_traceback_later(STOP_DUMP_S)
        collector.flush()
        summary, workers = self.summary, self.workers
        summary.restarts = sum(w.restarts for w in workers)
        summary.waited_s = sum(w.waited_s for w in workers)
        summary.spares = spare_stats(workers)
        summary.seconds = split_seconds(collector.seconds, summary, began, self.finished, len(workers))
        stats = {"seconds": summary.seconds, "restarts": summary.restarts, "spares": summary.spares,
                 "compared_bytes": summary.compared_bytes, "replaced": summary.replaced,
                 "problems": {k: {part: round(v, 3) for part, v in parts.items()}
                              for k, parts in sorted(collector.problems.items())}}
        if not completed:  # interrupted: its cells are kept, and when it stopped gives its wall time;
            # first, as closing a worker busy in a long launch can outlast a kill's grace
            self.store.stop_run(self.run_id, stats)
            self.stop.set()
            abandon(pool)
        closing = [threading.Thread(target=w.close) for w in workers]  # together: each may wait on a busy child
        for t in closing:
            t.start()
        for t in closing:
            t.join()
        pool.shutdown()
        faulthandler.cancel_dump_traceback_later()
        return stats


@contextmanager
def sigint_sets(flag: threading.Event) -> Iterator[None]:
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
