"""The parent's side of a run's stream: each record the workers send back, handled by its kind
(`RecordKind`) and committed to the store."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable

from kbm_toolkit.analysis.runs import TIME_SPLIT
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.stats import RECORD_MS, RunSummary
from kbm_toolkit.vocabulary import STOPPING_OUTCOMES, MutantStatus, RecordKind

BATCH_CELLS = 256
"""Cells committed at once at most; a batch is also committed after a second, or when the stream is quiet."""


class Committer:
    """The main thread's side of a run whose worker threads report `(problem, record)` pairs: it
    takes each (`take`) and commits cells in batches (`flush`), the store's only writer."""

    def __init__(self, count: int, on_progress: Callable[[int, int], None] | None) -> None:
        self.count = count
        """Cells done: stored before the run, or received since."""
        self.batch: list[dict[str, Any]] = []
        """Cells received, not committed yet."""
        self.on_progress = on_progress

    def follow(self, results: queue.Queue, threads: list[threading.Thread], stop: threading.Event,
               total: int) -> None:
        """Take `(problem, record)` pairs from `results` until every thread has ended and none is
        left, committing as it goes; KeyboardInterrupt once `stop` is set."""
        last_flush = time.monotonic()
        while any(t.is_alive() for t in threads) or not results.empty():
            if stop.is_set():
                raise KeyboardInterrupt
            try:
                key, rec = results.get(timeout=0.5)
            except queue.Empty:
                key, rec = None, None
            if rec is not None:
                self.take(key, rec)
            if self.batch and (len(self.batch) >= BATCH_CELLS or time.monotonic() - last_flush > 1.0 or rec is None):
                self.flush()
                last_flush = time.monotonic()
            if self.on_progress:
                self.on_progress(self.count, total)

    def take(self, key: str, rec: dict[str, Any]) -> None:  # pragma: no cover - overridden
        """Handle one record of problem `key`."""
        raise NotImplementedError

    def flush(self) -> None:  # pragma: no cover - overridden
        """Commit the cells received so far."""
        raise NotImplementedError


class Collector(Committer):
    """Takes the records of one run, kind by kind: cells are batched, checks, quarantines and
    verdicts written at once, and every record's milliseconds charged to its part of the run."""

    def __init__(self, store: Any, run_id: int, summary: RunSummary, options: RunOptions,
                 hashes: dict[str, str], given: dict[str, set[str]], count: int,
                 waiting: dict[str, tuple[set[str], int]] | None = None) -> None:
        super().__init__(count, options.on_progress)
        self.store, self.run_id, self.summary, self.options = store, run_id, summary, options
        self.hashes = hashes
        """Problem -> its substrate's hash, which its input checks are stored under."""
        self.given = given
        """Problem -> the ids of the inputs the run gives its mutants."""
        self.waiting = waiting or {}
        """Problem -> inputs checked again and how many mutants were not compiled for them (`_Run`)."""
        self.passed_again: dict[str, int] = {}
        """Problem -> how many of those inputs passed their check this time."""
        self.seconds = dict.fromkeys(TIME_SPLIT, 0.0)
        """Worker-seconds by `TIME_SPLIT` part, from the records' own times."""
        self.problems: dict[str, dict[str, float]] = {}
        """The same per problem, with `compared_bytes`, `compares` (cells compared), `compare_gpu_s`
        (the comparison kernels' own GPU time, inside `comparing`), `checked_bytes` and
        `check_gpu_s` (the same of the overwrite checks, inside `checking`), `crashes` (crashed or
        hung cells) and `crash_s_max` (the slowest launch-to-error): which problems a part's time
        comes from."""
        self.handlers: dict[str, Callable[[str, dict[str, Any]], None]] = {
            RecordKind.TIME: self._time, RecordKind.CELL: self._cell, RecordKind.INPUT: self._input,
            RecordKind.MARGINS: self._margins, RecordKind.QUARANTINE: self._quarantine,
            RecordKind.PROBLEM: self._problem, RecordKind.POISONED: self._poisoned}

    def take(self, key: str, rec: dict[str, Any]) -> None:
        """Handle one record of problem `key`."""
        kind = rec["kind"]
        for name, part in RECORD_MS.get(kind, {}).items():
            if rec.get(name):
                self._charge(key, part, rec[name] / 1000)
        handle = self.handlers.get(kind)
        if handle is not None:
            handle(key, rec)

    def flush(self) -> None:
        """Commit the cells received so far."""
        self.store.record_cells(self.run_id, self.batch, replace=self.options.redo is not None)
        self.summary.cells += len(self.batch)
        self.batch.clear()

    def _charge(self, key: str, part: str, s: float) -> None:
        self.seconds[part] += s
        mine = self.problems.setdefault(key, {})
        mine[part] = mine.get(part, 0.0) + s

    def _time(self, key: str, rec: dict[str, Any]) -> None:
        self._charge(key, rec["part"], rec["s"])

    def _cell(self, key: str, rec: dict[str, Any]) -> None:
        self.batch.append(rec)
        self.count += 1
        compared = rec.get("compared_bytes") or 0
        self.summary.compared_bytes += compared
        mine = self.problems.setdefault(key, {})
        mine["compared_bytes"] = mine.get("compared_bytes", 0) + compared
        mine["compares"] = mine.get("compares", 0) + bool(compared)  # bytes per comparison: its size
        for ms, s in (("compare_gpu_ms", "compare_gpu_s"), ("check_gpu_ms", "check_gpu_s")):
            if rec.get(ms):
                mine[s] = mine.get(s, 0.0) + rec[ms] / 1000
        if rec.get("checked_bytes"):
            mine["checked_bytes"] = mine.get("checked_bytes", 0) + rec["checked_bytes"]
        if rec.get("outcome") in STOPPING_OUTCOMES:  # `crashed` over these: a crash's cost
            mine["crashes"] = mine.get("crashes", 0) + 1
            if rec.get("crash_ms"):  # the slowest error: one slow fault or many quick ones
                mine["crash_s_max"] = max(mine.get("crash_s_max", 0.0), rec["crash_ms"] / 1000)

    def _input(self, key: str, rec: dict[str, Any]) -> None:
        self.store.record_input_check(self.hashes[key], self.run_id, rec)
        if rec["valid"] and rec["input"] in self.waiting.get(key, ((), 0))[0]:
            self.passed_again[key] = self.passed_again.get(key, 0) + 1

    def _margins(self, key: str, rec: dict[str, Any]) -> None:
        self.store.add_check_margins(self.hashes[key], rec["input"], rec["margins"])

    def _quarantine(self, key: str, rec: dict[str, Any]) -> None:
        self.flush()
        self.store.set_mutant_status(rec["mutant"], MutantStatus.QUARANTINED, "crashed or hung on the probe input")
        self.summary.quarantined.append(rec["mutant"])

    def _poisoned(self, key: str, rec: dict[str, Any]) -> None:
        self.summary.replaced.append({"problem": key, "input": rec.get("input", ""), "note": rec["note"]})

    def _problem(self, key: str, rec: dict[str, Any]) -> None:
        options = self.options
        if rec["verdict"] == "done" and self.passed_again.get(key):
            n, mutants = self.passed_again[key], self.waiting[key][1]
            rec = {**rec, "verdict": f"incomplete: {n} input{'s' if n > 1 else ''} whose reference had raised "
                                     f"passed the check this time; the same command runs {mutants} mutants on "
                                     f"{'them' if n > 1 else 'it'}"}
        self.summary.problems[key] = rec["verdict"]
        if rec["verdict"] == "done" and options.widens_share():
            # the share widens only once every cell it needs is stored: an interrupted
            # run leaves the problem scored on the share it had finished before
            self.flush()
            self.store.widen_sample(key, options.sample, full_rows=not options.first_kill, inputs=self.given.get(key))
        if options.on_problem:
            options.on_problem(key, rec["verdict"])
