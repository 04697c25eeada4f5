"""Submissions on the terminal: each protocol's verdict, input by input, or one line a submission."""

from __future__ import annotations

import math

from rich.table import Table

from kbm_toolkit.analysis.submissions import NOT_CHECKED, ProtocolVerdict, SubmissionVerdicts, verdict_counts
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.report import terminal
from kbm_toolkit.vocabulary import SubmissionStatus, Verdict


def _margin(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value:.2e}"


def _verdict_line(v: ProtocolVerdict) -> str:
    """`rejects: 2 of 9 inputs fail`, `accepts 9 inputs`, ..."""
    if v.verdict == NOT_CHECKED:
        return "not checked (the protocol gives this problem no input)"
    if not v.inputs:
        return v.verdict
    failed, tested = len(v.failed), sum(r.passed is not None for r in v.inputs)
    if v.verdict == Verdict.REJECTS:
        return f"rejects: {failed} of {len(v.inputs)} inputs fail"
    if v.verdict == Verdict.INCOMPLETE:
        return f"incomplete: {tested} of {len(v.inputs)} inputs judged, none fails"
    return f"accepts: {tested} inputs pass" + (f", {len(v.inputs) - tested} no test" if tested < len(v.inputs) else "")


def print_submission(v: SubmissionVerdicts, protocols: list[Protocol]) -> None:
    """One submission: each protocol's verdict, then one line per input (label, result, margin)."""
    console = terminal.console(width=100)
    s = v.submission
    console.print(f"{s['path']}  ({s['problem']}, submission {s['id']})", soft_wrap=True)
    if s["status"] != SubmissionStatus.READY:
        console.print(f"  {s['status'].replace('_', ' ')}: {s['note']}; every protocol rejects it", soft_wrap=True)
        return
    judges = {p.name: p.judge for p in protocols}
    for pv in v.protocols:
        console.print(f"  {pv.protocol} ({judges[pv.protocol].words()}): {_verdict_line(pv)}", soft_wrap=True)
        for r in pv.inputs:
            flag = "  (kbm's correct substrate fails it too)" if r.valid is False and r.passed is False else ""
            note = f"  {r.note}" if r.note and r.passed is not True else ""
            console.print(f"    {r.label:<44} {r.words:<16} {_margin(r.margin):>9}{note}{flag}", soft_wrap=True)


def print_table(verdicts: list[SubmissionVerdicts], protocols: list[Protocol]) -> None:
    """One line a submission, a column a protocol; then each protocol's counts."""
    console = terminal.console(width=100)
    table = Table(title=f"{len(verdicts):,} submissions", title_justify="left")
    table.add_column("problem")
    table.add_column("submission")
    for p in protocols:
        table.add_column(p.name)
    for v in verdicts:
        s = v.submission
        name = s["name"] + ("" if s["status"] == SubmissionStatus.READY else f" ({s['status'].replace('_', ' ')})")
        table.add_row(s["problem"], name, *(v.verdict(p.name) for p in protocols))
    console.print(table)
    for name, counts in verdict_counts(verdicts).items():
        words = ", ".join(f"{counts[w]:,} {w}" for w in (*Verdict.values(), NOT_CHECKED) if counts[w])
        console.print(f"{name}: {words}")
