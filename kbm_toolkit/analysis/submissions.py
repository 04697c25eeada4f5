"""Which protocols accept which submissions: a query over the store's submission cells.

A protocol accepts a submission when every input it gives the submission's problem passes as the
protocol compares (`judging.Judging.decide` on the stored margins), rejects it when one fails or
its file does not load, and is `incomplete` while some input has no decided result. An input on
which the reference itself raised or is non-finite tests nothing and is left out, as
KernelBench-Verified drops such configs. Where the store knows that kbm's correct substrate fails
an input too, the input is marked: a rejection there is a false rejection of the protocol's.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from kbm_toolkit.judging import stored_margin
from kbm_toolkit.problems.problem import Problem, problem_from_row
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import Outcome, SubmissionStatus, Verdict

NO_TEST = "not a test"
"""How the note of an input the reference tests nothing on begins (it raised, or is non-finite)."""

NOT_CHECKED = "not checked"
"""A protocol that gives a problem no input (it excludes it) has no verdict on its submissions."""


@dataclass(frozen=True)
class InputResult:
    """One input of a protocol, for one submission: the stored cell as that protocol judges it."""

    input: str
    label: str
    outcome: str | None
    """The cell's outcome (`vocabulary.Outcome`: `pass` is finite and the right shape, the margin
    decides); None when there is no cell, or the input is no test."""
    margin: float | None
    """The margin the protocol's comparison reads (None: not stored)."""
    passed: bool | None
    """None: no cell yet, no test, or the stored margins do not decide this protocol's comparison."""
    note: str | None = None
    valid: bool | None = None
    """Whether kbm's correct substrate passes this input (None: the store does not say)."""

    @property
    def no_test(self) -> bool:
        """Whether the reference tests nothing on this input (it raised, or is non-finite)."""
        return (self.note or "").startswith(NO_TEST)

    @property
    def words(self) -> str:
        """The verdict on this input, for people: pass, fail (its outcome), or why there is none."""
        if self.passed is True:
            return "pass"
        if self.passed is False:
            return "fail" if self.outcome in (Outcome.PASS, Outcome.VALUE) else f"fail ({self.outcome})"
        if self.no_test:
            return "no test"
        return "undecided" if self.outcome else "not run"


@dataclass
class ProtocolVerdict:
    """One protocol's verdict on one submission, with its inputs."""

    protocol: str
    verdict: str
    """A `vocabulary.Verdict` value, or `NOT_CHECKED`."""
    inputs: list[InputResult] = field(default_factory=list)

    @property
    def failed(self) -> list[InputResult]:
        """The inputs that fail."""
        return [r for r in self.inputs if r.passed is False]


@dataclass
class SubmissionVerdicts:
    """A stored submission and every protocol's verdict on it."""

    submission: dict[str, Any]
    """Its row in the store (`id`, `problem`, `path`, `status`, `note`, ...)."""
    protocols: list[ProtocolVerdict]

    def verdict(self, protocol: str) -> str:
        """The named protocol's verdict."""
        return next(v.verdict for v in self.protocols if v.protocol == protocol)

    def record(self) -> dict[str, Any]:
        """As plain data (`kbm verify --json`)."""
        s = self.submission
        return {"id": s["id"], "problem": s["problem"], "path": s["path"], "sample": s["sample"],
                "status": s["status"], "note": s["note"],
                "protocols": {v.protocol: {"verdict": v.verdict, "inputs": [
                    {"input": r.input, "label": r.label, "result": r.words, "outcome": r.outcome,
                     "margin": r.margin, "note": r.note, "substrate_passes": r.valid} for r in v.inputs]}
                    for v in self.protocols}}


def submission_verdicts(store: Any, protocols: list[Protocol], ids: Iterable[str] | None = None,
                        problems: dict[str, Problem] | None = None) -> list[SubmissionVerdicts]:
    """Every protocol's verdict on the store's submissions (those of `ids`, else all). `problems`
    gives the problems as loaded here; others are read from the store's rows."""
    rows = store.submission_rows(ids)
    cells = store.submission_cells(r["id"] for r in rows)
    stored = store.problem_rows()
    facts = store.input_facts({i for _, i in cells})
    found = []
    for row in rows:
        problem = (problems or {}).get(row["problem"]) or problem_from_row(row["problem"], stored.get(row["problem"], {}))
        found.append(SubmissionVerdicts(row, [_judge(p, problem, row, cells, facts) for p in protocols]))
    return found


def _judge(protocol: Protocol, problem: Problem, row: dict[str, Any], cells: dict[tuple[str, str], dict[str, Any]],
           facts: dict[str, tuple[str, bool | None]]) -> ProtocolVerdict:
    specs = protocol.specs(problem)
    if not specs:
        return ProtocolVerdict(protocol.name, NOT_CHECKED)
    if row["status"] != SubmissionStatus.READY:
        return ProtocolVerdict(protocol.name, Verdict.REJECTS.value)
    judging = protocol.judge
    results = []
    for spec in specs:
        cell = cells.get((row["id"], spec.id))
        label, valid = facts.get(spec.id, (spec.id, None))
        label = spec.label or label
        if cell is None or cell["outcome"] is None:
            results.append(InputResult(spec.id, label, None, None, None, cell["note"] if cell else None, valid))
            continue
        margins = _margins(cell)
        passed = judging.decide(cell["outcome"], cell["margin"], cell["max_abs"], margins)
        margin = (stored_margin(judging.key, cell["margin"], cell["max_abs"], margins)
                  if cell["outcome"] in (Outcome.PASS, Outcome.VALUE) else None)
        results.append(InputResult(spec.id, label, cell["outcome"], margin, passed, cell["note"], valid))
    return ProtocolVerdict(protocol.name, _overall(results), results)


def _margins(cell: dict[str, Any]) -> dict[str, float] | None:
    return json.loads(cell["margins"]) if cell.get("margins") else None


def _overall(results: list[InputResult]) -> str:
    if any(r.passed is False for r in results):
        return Verdict.REJECTS.value
    if any(r.passed is None and not r.no_test for r in results):
        return Verdict.INCOMPLETE.value
    return Verdict.ACCEPTS.value


def verdict_counts(verdicts: list[SubmissionVerdicts]) -> dict[str, Counter]:
    """Per protocol, how many submissions get each verdict."""
    counts: dict[str, Counter] = {}
    for v in verdicts:
        for p in v.protocols:
            counts.setdefault(p.protocol, Counter())[p.verdict] += 1
    return counts
