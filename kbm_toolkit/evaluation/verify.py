"""`kbm verify` as a library call: submissions judged on protocols' inputs, their cells stored.

Per problem, the union of the protocols' input specs is the work: a worker (`submission_task`)
builds each input and its references once and runs every submission of its share of the problem
on it, so a folder of a hundred samples costs one input build per share, not a hundred (with
several workers, problems are shared out while there are fewer than two shares per worker). The
parent never touches CUDA; it follows what the worker streams, charges a crash or an overrun to
the submission and input under way (a file that crashes or hangs while loading is a
`load_error`), resumes the rest in a fresh worker, and is the only writer of the store. Cells
keep margins, as the kill matrix's do, so each protocol's verdict is a query
(`analysis.submissions`); a run stopped at any moment resumes where it stopped.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from kbm_toolkit.evaluation.collect import Committer
from kbm_toolkit.evaluation.driver import PHASE_TIMEOUT_S
from kbm_toolkit.evaluation.options import CELL_WARM_UP, GPU_PRELOAD
from kbm_toolkit.evaluation.run import sigint_sets
from kbm_toolkit.evaluation.workers import Reply, Worker, WorkerClosed, follow
from kbm_toolkit.judging import Margin, extra_margins
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.submission import Submission
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import RecordKind, RunKind, SubmissionStatus

SUBMISSION_TASK = "kbm_toolkit.evaluation.submission_task:submission_task"
"""The workers' task for `kbm verify`: one problem's submissions, streamed back record by record."""

LOAD_TIMEOUT_S = 900.0
"""How long executing a submission's file may take: an inline CUDA extension compiles with nvcc."""

def run_deadline_s(ref_ms: float | None) -> float:
    """How long a submission may take on one input, its model's construction included: 50x the
    reference's forward, at least 30 s."""
    return max(30.0, 50.0 * (ref_ms or 0.0) / 1000.0) + 2.0


def protocol_specs(problem: Problem, protocols: Iterable[Protocol]) -> list[InputSpec]:
    """Every input any of `protocols` gives `problem`, once each, in the protocols' order."""
    seen: dict[str, InputSpec] = {}
    for protocol in protocols:
        for spec in protocol.specs(problem):
            seen.setdefault(spec.id, spec)
    return list(seen.values())


@dataclass
class VerifyOptions:
    """The knobs of one `verify_submissions`; the defaults are `kbm verify`'s."""

    workers: int = 1
    """Worker processes on the GPU, each on its own share of the submissions (`share_out`)."""
    run_timeout_s: float | None = None
    """How long a submission may take on one input (None: `run_deadline_s` of the reference's time)."""
    load_timeout_s: float = LOAD_TIMEOUT_S
    again: bool = False
    """Judge submissions the store has judged already anew (their stored cells are dropped)."""
    device: str = "cuda"
    """Where inputs, references and submissions run (`cpu` for plain-torch submissions in tests)."""
    target: str = SUBMISSION_TASK
    """The workers' task (tests swap in a fake one)."""
    warm: str | None = CELL_WARM_UP
    """What each worker runs before its first task (None: nothing, e.g. on the CPU)."""
    on_progress: Callable[[int, int], None] | None = None
    """Called with (cells done, cells in all) as the run goes."""
    on_problem: Callable[[str, str], None] | None = None
    """Called with (problem, verdict) as each problem finishes."""


@dataclass
class VerifySummary:
    """What `verify_submissions` did."""

    run: int
    cells: int = 0
    restarts: int = 0
    problems: dict[str, str] = field(default_factory=dict)
    """Problem -> `done`, or `error: ...` when its worker could not go on."""
    seconds: float = 0.0


@dataclass
class _Plan:
    """One problem's work: its inputs, the submissions that can run, and the pairs already stored."""

    problem: Problem
    specs: list[InputSpec]
    submissions: list[Submission]
    done: set[tuple[str, str]]
    protocols: dict[str, frozenset[str]] = field(default_factory=dict)
    """Input -> the protocols that give it: a crash there rejects a submission under all of them."""

    def pairs(self) -> int:
        """Pairs left to run."""
        return sum((s.id, i.id) not in self.done for s in self.submissions for i in self.specs)

    def halves(self) -> tuple[_Plan, _Plan]:
        """The plan as two plans of half its submissions each (each builds the inputs for its own)."""
        mid = len(self.submissions) // 2
        return (replace(self, submissions=self.submissions[:mid]), replace(self, submissions=self.submissions[mid:]))


MIN_SHARE = 3
"""The fewest submissions a problem's share is cut down to: each share builds the problem's inputs
and references (and the reference model, on the CPU) once more."""


def share_out(plans: list[_Plan], workers: int) -> list[_Plan]:
    """Plans for `workers` workers: while there are fewer than two per worker, the one with the most
    pairs left is halved (down to `MIN_SHARE` submissions), so one problem's sixty samples, or a
    few slow ones, do not leave the other workers idle at the end; in their order otherwise."""
    plans = list(plans)
    while workers > 1 and len(plans) < 2 * workers:
        big = max((p for p in plans if len(p.submissions) >= 2 * MIN_SHARE), key=_Plan.pairs, default=None)
        if big is None:
            break
        at = plans.index(big)
        plans[at:at + 1] = big.halves()
    return plans


def verify_submissions(store: Any, submissions: list[Submission], protocols: list[Protocol],
                       env: dict[str, Any], options: VerifyOptions | None = None) -> VerifySummary:
    """Judge every submission on every input of `protocols` for its problem: store the submissions,
    then run the cells the store lacks. A malformed file is stored as such and never run."""
    options = options or VerifyOptions()
    run_id = store.start_run(RunKind.VERIFY, {**env, "workers": options.workers,
                                              "protocols": [p.name for p in protocols]})
    summary = VerifySummary(run_id)
    plans = [_plan(store, problem, [s for s in submissions if s.problem.key == problem.key], protocols, options)
             for problem in {s.problem.key: s.problem for s in submissions}.values()]
    plans = share_out([p for p in plans if p.pairs()], options.workers)
    margins = extra_margins([p.judge for p in protocols])
    began = time.monotonic()
    completed = False
    run = _Run(store, summary, plans, margins, options)
    try:
        run.go()
        completed = True
    finally:
        summary.seconds = time.monotonic() - began
        stats = {"seconds": {"wall": round(summary.seconds, 3)}, "restarts": summary.restarts}
        (store.finish_run if completed else store.stop_run)(run_id, stats)
    return summary


def _plan(store: Any, problem: Problem, submissions: list[Submission], protocols: list[Protocol],
          options: VerifyOptions) -> _Plan:
    """Store the problem, its submissions and inputs; what is left to run of them."""
    store.record_problem(problem)
    store.record_submissions([s.row() for s in submissions], again=options.again)
    specs = protocol_specs(problem, protocols)
    store.record_inputs(specs, "verify")
    ready = {r["id"] for r in store.submission_rows(s.id for s in submissions)
             if r["status"] == SubmissionStatus.READY}
    runnable = [s for s in submissions if s.id in ready]
    ids = {p.name: {s.id for s in p.specs(problem)} for p in protocols}
    given = {i.id: frozenset(name for name, mine in ids.items() if i.id in mine) for i in specs}
    return _Plan(problem, specs, runnable, set(store.submission_cells(s.id for s in runnable)), given)


class _Run(Committer):
    """One verification under way: a thread per worker drives problems, the main thread commits."""

    def __init__(self, store: Any, summary: VerifySummary, plans: list[_Plan], margins: list[Margin],
                 options: VerifyOptions) -> None:
        super().__init__(0, options.on_progress)
        self.store, self.summary, self.plans, self.margins, self.options = store, summary, plans, margins, options
        self.results: queue.Queue = queue.Queue()
        self.work: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.total = sum(p.pairs() for p in plans)
        self.shares = Counter(p.problem.key for p in plans)
        """Problem -> its shares not yet ended."""

    def go(self) -> None:
        """Drive every plan to its end; on SIGINT or an error, stop cleanly, then re-raise."""
        if not self.plans:
            return
        options = self.options
        preload = GPU_PRELOAD if options.warm else ()
        workers = [Worker(options.target, warm=options.warm, spares=1, preload=preload)
                   for _ in range(min(options.workers, len(self.plans)))]
        for plan in self.plans:
            self.work.put(plan)
        for _ in workers:
            self.work.put(None)
        threads = [threading.Thread(target=self._serve, args=(w,), daemon=True) for w in workers]
        try:
            with sigint_sets(self.stop):
                for t in threads:
                    t.start()
                self.follow(self.results, threads, self.stop, self.total)
        finally:
            self.flush()
            self.summary.restarts = sum(w.restarts for w in workers)
            self.stop.set()
            closing = [threading.Thread(target=w.close) for w in workers]
            for t in closing:
                t.start()
            for t in closing:
                t.join()

    def _serve(self, worker: Worker) -> None:
        """A worker's thread: drive each plan on `worker` until none is left or the run stops."""
        while not self.stop.is_set():
            plan = self.work.get()
            if plan is None:
                return
            key = plan.problem.key
            try:
                verdict = _Verifier(worker, plan, self.margins, self.options,
                                    lambda rec, key=key: self.results.put((key, rec))).verdict()
            except WorkerClosed:
                return
            self.results.put((key, {"kind": RecordKind.PROBLEM, "verdict": verdict}))

    def take(self, key: str, rec: dict[str, Any]) -> None:
        """Handle one record of problem `key`: cells batched, loading verdicts and problems at once."""
        kind = rec["kind"]
        self.count += rec.pop("skipped", 0)  # pairs that will never run count as done, for the progress bar
        if kind == RecordKind.CELL:
            self.batch.append(rec)
            self.count += 1
        elif kind == RecordKind.LOADED:
            status = SubmissionStatus.READY if rec["ok"] else SubmissionStatus.LOAD_ERROR
            self.store.set_submission_status(rec["submission"], status, rec.get("note"), self.summary.run,
                                             rec.get("load_ms"))
        elif kind == RecordKind.PROBLEM:  # one share of the problem ended: the first error is its verdict
            self.flush()
            if self.summary.problems.get(key, "done") == "done":
                self.summary.problems[key] = rec["verdict"]
            self.shares[key] -= 1
            if not self.shares[key] and self.options.on_problem:
                self.options.on_problem(key, self.summary.problems[key])

    def flush(self) -> None:
        """Commit the cells received so far."""
        self.store.record_submission_cells(self.summary.run, self.batch)
        self.summary.cells += len(self.batch)
        self.batch.clear()


class _Verifier:
    """Runs one problem's pairs to completion on `worker`, restarting it as needed, for a verdict."""

    def __init__(self, worker: Worker, plan: _Plan, margins: list[Margin], options: VerifyOptions,
                 emit: Callable[[dict[str, Any]], None]) -> None:
        self.worker, self.plan, self.margins, self.options, self.emit = worker, plan, margins, options, emit
        self.done = set(plan.done)
        self.failed: set[str] = set()
        """Submissions whose file did not load: none of their pairs runs."""
        self.rejecting: dict[str, set[str]] = {}
        """Submission -> the protocols a crash or a hang of its worker rejects it under already."""
        self.ref_ms: dict[str, float] = {}
        self.current: dict[str, Any] = {}
        """The `start` record of what is under way: a crash or an overrun is its."""
        self.progressed = False
        self.handlers: dict[str, Callable[[dict[str, Any]], bool | None]] = {
            RecordKind.INPUT: self._input, RecordKind.START: self._start, RecordKind.LOADED: self._loaded,
            RecordKind.CELL: self._cell, RecordKind.POISONED: self._poisoned}

    def _left(self) -> list[tuple[Submission, InputSpec]]:
        return [(s, i) for i in self.plan.specs for s in self.plan.submissions
                if s.id not in self.failed and (s.id, i.id) not in self.done]

    def verdict(self) -> str:
        """Send tasks until every pair is done: `done`, or `error: ...` when the worker cannot go on."""
        stuck = 0
        while True:
            left = self._left()
            if not left:
                return "done"
            self.current, self.progressed = {}, False
            error = self._follow(self.worker.stream(self._task(left), self._timeout))
            if error:
                return error
            stuck = 0 if self.progressed else stuck + 1
            if stuck >= 2:
                return "error: the worker fails before any submission runs (building an input or its reference)"

    def _task(self, left: list[tuple[Submission, InputSpec]]) -> dict[str, Any]:
        subs = {s.id: s for s, _ in left}
        specs = {i.id: i for _, i in left}
        return {"problem": self.plan.problem.record(), "device": self.options.device,
                "specs": [i.record() for i in self.plan.specs if i.id in specs],
                "submissions": [s.record() for s in self.plan.submissions if s.id in subs],
                "done": sorted(self.done), "margins": [list(m) for m in self.margins]}

    def _timeout(self) -> float:
        phase = self.current.get("phase")
        if phase == "load":
            return self.options.load_timeout_s
        if phase == "run":
            return self.options.run_timeout_s or run_deadline_s(self.ref_ms.get(self.current["input"]))
        return PHASE_TIMEOUT_S

    def _follow(self, replies: Iterable[Reply]) -> str | None:
        """Handle one task's replies until it ends; its error verdict if the task raised."""
        return follow(replies, self.handlers, self._lost)

    def _lost(self, reply: Reply) -> None:
        """The worker died or overran: charge it to what was under way."""
        current = self.current
        if not current:
            return
        word = "crashed" if reply.status == "crash" else "hung"
        if current["phase"] == "load":
            self._loaded({"kind": RecordKind.LOADED, "submission": current["submission"], "ok": False,
                          "note": f"{word} while loading: {reply.message}"})
        else:
            submission, input_id = current["submission"], current["input"]
            skipped = self._stop_after(submission, input_id)
            self._cell({"kind": RecordKind.CELL, "submission": submission, "input": input_id,
                        "outcome": reply.status, "note": reply.message, "skipped": skipped})

    def _stop_after(self, submission: str, input_id: str) -> int:
        """A worker lost to `submission` on `input_id` (dead, hung, or its CUDA context gone) rejects
        it under every protocol giving that input: its inputs that only those protocols give can
        change no verdict, and would each cost a restart. Mark them done; return how many."""
        rejecting = self.rejecting.setdefault(submission, set())
        rejecting |= self.plan.protocols.get(input_id, frozenset())
        needless = [i.id for i in self.plan.specs if i.id != input_id and (submission, i.id) not in self.done
                    and self.plan.protocols.get(i.id, frozenset()) <= rejecting]
        self.done.update((submission, i) for i in needless)
        return len(needless)

    def _input(self, rec: dict[str, Any]) -> None:
        self.ref_ms[rec["input"]] = rec.get("ref_ms") or 0.0
        self.progressed = True

    def _start(self, rec: dict[str, Any]) -> None:
        self.current = rec

    def _loaded(self, rec: dict[str, Any]) -> None:
        if not rec["ok"]:
            self.failed.add(rec["submission"])
            left = sum((rec["submission"], i.id) not in self.done for i in self.plan.specs)
            rec = {**rec, "skipped": left}
        self.current = {}
        self.progressed = True
        self.emit(rec)

    def _cell(self, rec: dict[str, Any]) -> None:
        self.done.add((rec["submission"], rec["input"]))
        self.current = {}
        self.progressed = True
        self.emit(rec)

    def _poisoned(self, rec: dict[str, Any]) -> bool:
        self.worker.retire()  # its CUDA context is gone; a warm spare takes over
        if rec.get("submission"):  # its crash cell came just before: it costs no more restarts
            self.emit({"kind": RecordKind.POISONED, "skipped": self._stop_after(rec["submission"], rec["input"])})
        return True
