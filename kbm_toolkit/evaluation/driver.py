"""Driving one problem on a GPU worker: the probe phase, then the full input set, task after task
until every (mutant, input) pair is done, following what the worker streams back record by record.

A crash costs one worker restart and the next task resumes after the culprit; a launch that
overruns its deadline (derived from the correct kernel's time on that input) is killed and
recorded as `timeout`.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from kbm_toolkit.evaluation.first_kill import Settled
from kbm_toolkit.evaluation.plan import ProblemPlan, StoredProgress
from kbm_toolkit.evaluation.workers import Reply, Worker, follow
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.vocabulary import STOPPING_OUTCOMES, MutantStatus, RecordKind

PHASE_TIMEOUT_S = 900.0
"""Building an input, the reference and the correct kernel: generous, only a broken box hits it."""

PROBE_STANDBYS = 2
"""Spares, first in line, that build the probe input ahead (the full input set's get the worker's
one). A problem's crashers crash on its probe, one after another, sooner than a spare briefed after
the crash before builds it, and the probe's input is small, so a second standby costs little. Not
more: a worker's spares beyond its standbys are the ones a sibling may borrow."""

Emit = Callable[[dict[str, Any]], None]
"""Where a driver sends each record for the parent to commit."""


def mutant_deadline_s(correct_ms: float | None) -> float:
    """How long one mutant may run on an input: 50x the correct kernel, at least 5 s (+2 s load)."""
    return max(5.0, 50.0 * (correct_ms or 0.0) / 1000.0) + 2.0


class ProblemRun:
    """One problem's run: the probe phase, then the full input set, on a worker, for a verdict.

    An input that did not fit in GPU memory beside the other workers' is left unchecked
    (`short_of_memory`); `again` then resumes the same run where it stopped, on a worker that has
    its GPU to itself, without repeating a cell.
    """

    def __init__(self, progress: StoredProgress, plan: ProblemPlan, emit: Emit,
                 deadline: Callable[[float | None], float] = mutant_deadline_s, rerun_crashers: bool = False) -> None:
        self.progress, self.plan, self.emit = progress, plan, emit
        self.deadline, self.rerun_crashers = deadline, rerun_crashers
        self.main: _Driver | None = None
        """The full input set's driver, once the probe phase is over: what `again` resumes."""

    def verdict(self, worker: Worker) -> str:
        """Probe phase, then the full input set, on `worker`."""
        progress, plan, emit, deadline = self.progress, self.plan, self.emit, self.deadline
        done, checked = set(progress.done), dict(progress.checked)
        if not self.rerun_crashers:  # a crashed mutant stays stopped (see _Driver)
            done |= {(m, s.id) for m in progress.crashed for s in plan.specs}
        mutants = [m for m in plan.mutants if m["status"] == MutantStatus.DISTINCT]
        if plan.probe is not None:
            probed: list[dict[str, Any]] = []

            def probe_emit(rec: dict[str, Any]) -> None:
                probed.append(rec)
                emit(rec)

            verdict = _Driver(worker, plan, [plan.probe], mutants, done, checked, probe_emit, deadline,
                              standbys=PROBE_STANDBYS).verdict()
            if verdict != "done":
                return verdict
            crashers = {r["mutant"] for r in probed
                        if r["kind"] == RecordKind.CELL and r["outcome"] in STOPPING_OUTCOMES}
            # quarantine what a killed run left undone (quarantined mutants are not among `mutants`)
            crashers |= progress.probe_crashes & {m["id"] for m in mutants}
            for m in crashers:
                emit({"kind": RecordKind.QUARANTINE, "mutant": m})
            mutants = [m for m in mutants if m["id"] not in crashers]
        self.main = _Driver(worker, plan, plan.specs, mutants, done, checked, emit, deadline, self.rerun_crashers,
                            progress.settled, progress.recheck)
        return self.main.verdict()

    @property
    def short_of_memory(self) -> int:
        """How many inputs were left unchecked because the worker ran out of GPU memory building them."""
        return len(self.main.unbuilt) if self.main is not None else 0

    def again(self, worker: Worker) -> str:
        """Resume on `worker`, alone on its GPU: the inputs left unbuilt are tried once more."""
        assert self.main is not None, "again() follows a verdict() that reached the full input set"
        return self.main.resume(worker)


def _complete(mutants: Iterable[str], specs: list[InputSpec], done: set[tuple[str, str]],
              checked: dict[str, Any]) -> bool:
    """Whether every pair of `mutants` (ids) and `specs` is done and every input is checked."""
    return all(s.id in checked for s in specs) and all((m, s.id) in done for m in mutants for s in specs)


class _Driver:
    """Runs one problem's pairs to completion on `worker`, restarting it as needed, for a verdict.

    A mutant that crashes or hangs on an input is not run on the rest (`rerun_crashers` does):
    the crash already kills it at every tolerance, and each further crash would cost a restart.
    With `settled` (`--first-kill`), a pair its rule no longer needs counts as done: the worker
    skips the same pairs by the same rule. There a crash settles only its own input's protocols,
    like any detection, so the others still get their cells (at most one restart each).
    `checked` holds each checked input's correct-kernel margin and time (None: invalid); the
    worker does not run the correct kernel again on a valid one.
    """

    def __init__(self, worker: Worker, plan: ProblemPlan, specs: list[InputSpec], mutants: list[dict[str, Any]],
                 done: set[tuple[str, str]], checked: dict[str, dict[str, Any] | None], emit: Emit,
                 deadline: Callable[[float | None], float], rerun_crashers: bool = False,
                 settled: Settled | None = None, recheck: dict[str, dict[str, Any]] | None = None,
                 standbys: int | None = None) -> None:
        recheck = recheck or {}
        self.worker, self.plan, self.specs, self.mutants = worker, plan, specs, mutants
        self.standbys = standbys
        """How many spares build each input ahead (`Worker.prepare`); None: the worker's number."""
        self.done, self.checked, self.emit, self.deadline = done, checked, emit, deadline
        self.rerun_crashers, self.settled = rerun_crashers, settled
        self.recheck = {i: r for i, r in recheck.items() if i in {s.id for s in specs}}
        """Valid inputs of these specs stored without some of the plan's margins, until they come."""
        self.current: dict[str, Any] = {}
        """The launch under way (its `start` record, and when it came): a crash or overrun is its."""
        self.progressed = False
        """Whether the task under way has checked an input or produced a cell."""
        # what each record the worker streams means to the parent; True: end the task, the worker is lost
        self.handlers: dict[str, Callable[[dict[str, Any]], bool | None]] = {
            RecordKind.INPUT: self._input, RecordKind.REBUILT: self._rebuilt, RecordKind.MARGINS: self._margins,
            RecordKind.START: self._start, RecordKind.CELL: self._cell, RecordKind.POISONED: self._poisoned,
            RecordKind.UNBUILT: self._unbuilt, RecordKind.TIME: self.emit}
        self.unbuilt: dict[str, str] = {}
        """Inputs the worker could not build for lack of GPU memory (id -> why): left unchecked."""

    def resume(self, worker: Worker) -> str:
        """Go on on `worker`, alone on its GPU, trying the unbuilt inputs once more; the verdict."""
        self.worker = worker
        self.unbuilt.clear()
        return self.verdict()

    def verdict(self) -> str:
        """Send tasks until every pair is done: `done`, or `error: ...` when the worker cannot go on."""
        stuck = 0
        while True:
            if _complete([m["id"] for m in self.mutants], self._buildable(), self.done, self.checked) \
                    and self.recheck.keys() <= self.unbuilt.keys():
                if self.unbuilt:  # its other inputs' cells are stored; these wait for a GPU with more memory
                    first, n = next(iter(self.unbuilt.values())), len(self.unbuilt)
                    alike = " (and the others alike)" if n > 1 else ""
                    return f"error: {n} of its inputs left unchecked, {first}{alike}; run again on a GPU with " \
                           "more memory"
                return "done"
            self.current, self.progressed = {}, False
            error = self._follow(self.worker.stream(self._task(), self._timeout))
            if error:
                return error
            stuck = 0 if self.progressed else stuck + 1
            if stuck >= 2:
                return "error: the worker fails before any mutant runs (reference or correct kernel)"

    def _task(self) -> dict[str, Any]:
        """The worker task for the pairs not done yet."""
        plan, settled, checked = self.plan, self.settled, self.checked
        return {"problem": plan.problem.record(),
                "substrate": str(plan.substrate.folder), "original": plan.original,
                "specs": [s.record() for s in self._buildable()],
                "mutants": [{k: m.get(k) for k in ("id", "image", "kernel_source", "launcher_source", "launch")}
                            for m in self.mutants],
                "done": sorted(self.done), "checked": sorted(checked), "rerun_crashers": self.rerun_crashers,
                "valid": {i: c["margin"] for i, c in checked.items() if c is not None},
                "first_kill": settled.rule.record() if settled else None,
                "margins": [list(m) for m in plan.margins], "recheck": dict(self.recheck)}

    def _timeout(self) -> float:
        """How long to wait for the worker's next record: a launch's deadline, else a phase's."""
        if not self.current:
            return PHASE_TIMEOUT_S
        return self.deadline((self.checked.get(self.current["input"]) or {}).get("kernel_ms"))

    def _follow(self, replies: Iterable[Reply]) -> str | None:
        """Handle one task's replies until it ends; its error verdict if the task raised."""
        return follow(replies, self.handlers, self._worker_lost)

    def _worker_lost(self, reply: Reply) -> None:
        """The worker crashed or was killed for overrunning: the launch under way gets the cell."""
        if self.current:
            self._lost()
            self._take({"kind": RecordKind.CELL, "mutant": self.current["mutant"],
                        "input": self.current["input"], "outcome": reply.status, "note": reply.message})
            self.progressed = True

    def _input(self, rec: dict[str, Any]) -> None:
        self.checked[rec["input"]] = ({"margin": rec["margin"], "kernel_ms": rec.get("kernel_ms")}
                                      if rec["valid"] else None)
        if not rec["valid"]:
            self.done.update((m["id"], rec["input"]) for m in self.mutants)
        else:
            self._prepare(rec["input"])
            if self.settled is not None:  # its margin says at which tolerances its cells can count
                self.settled.check(rec["input"], rec["margin"])
                self.done.update((m["id"], rec["input"]) for m in self.mutants
                                 if not self.settled.needed(m["id"], rec["input"]))
        self.emit(rec)
        self.progressed = True

    def _buildable(self) -> list[InputSpec]:
        """The problem's inputs but those the worker ran out of memory building."""
        return [s for s in self.specs if s.id not in self.unbuilt]

    def _unbuilt(self, rec: dict[str, Any]) -> None:
        self.unbuilt[rec["input"]] = rec["note"]  # its recheck, if any, waits with it
        self.progressed = True  # the task went on to the problem's other inputs

    def _rebuilt(self, rec: dict[str, Any]) -> None:
        self._prepare(rec["input"])
        self.emit(rec)  # a valid input built again: only its time is news

    def _prepare(self, spec_id: str) -> None:
        """The worker's mutants run on this valid input now: its next spare builds it too, so a
        restart after a crash on it (most crashes come on the probe) need not build it again."""
        spec = next((s for s in self.specs if s.id == spec_id), None)
        if spec is None:
            return
        self.worker.prepare({"problem": self.plan.problem.record(), "spec": spec.record(),
                             "margins": [list(m) for m in self.plan.margins]}, standbys=self.standbys)

    def _margins(self, rec: dict[str, Any]) -> None:
        self.recheck.pop(rec["input"], None)
        self.emit(rec)
        self.progressed = True

    def _start(self, rec: dict[str, Any]) -> None:
        self.current = {**rec, "at": time.monotonic()}

    def _cell(self, rec: dict[str, Any]) -> None:
        if "ms" not in rec and "crash_ms" not in rec and self.current:
            self._lost()  # a worker that timed its own crashed launch charges it itself (`crash_ms`)
        self._take(rec)
        self.current = {}
        self.progressed = True

    def _poisoned(self, rec: dict[str, Any]) -> bool:
        self.worker.retire()  # its CUDA context is gone; a warm spare takes over
        if rec.get("note"):  # replaced with no crashed cell to say why: the run reports it
            self.emit(rec)
        return True

    def _lost(self) -> None:
        """The launch in `current` crashed or hung: charge its time until then."""
        self.emit({"kind": RecordKind.TIME, "part": "crashed", "s": time.monotonic() - self.current["at"]})

    def _take(self, cell: dict[str, Any]) -> None:
        """A cell is in: its pair is done, and so are those it makes needless; the parent commits it."""
        m, settled = cell["mutant"], self.settled
        self.done.add((m, cell["input"]))
        if settled is not None:
            settled.cell(m, cell["input"], cell["outcome"], cell.get("margin"))
            self.done.update((m, s.id) for s in self.specs if not settled.needed(m, s.id))
        elif cell["outcome"] in STOPPING_OUTCOMES and not self.rerun_crashers:
            self.done.update((m, s.id) for s in self.specs)
        self.emit(cell)
