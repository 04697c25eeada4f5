"""Terminal output for mutation: a progress bar and the Table-1-shaped summary."""

from __future__ import annotations

from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from kbm_toolkit.report import terminal
from kbm_toolkit.mutation.summary import STAGES, MutationSummary
from kbm_toolkit.vocabulary import FAMILIES


def progress_bar() -> Progress:
    """Per-problem compile progress, on stderr so piped output stays clean."""
    return Progress(TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=terminal.console(stderr=True), transient=True)


def _table(title: str, first: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(first)
    for stage in STAGES:
        table.add_column(stage.replace("_", " "), justify="right")
    for label, counts in rows:
        table.add_row(label, *(str(counts.get(stage, 0)) for stage in STAGES))
    return table


def print_summary(summary: MutationSummary, by_rule: bool = True) -> None:
    """Generated → non-compiling, duplicate, equivalent → distinct, in total, by family and rule."""
    console = terminal.console(width=110)  # rule names and six counts stay on one line when piped
    for key, why in summary.skipped.items():
        console.print(f"skipped {key}: {why}")
    total = summary.total
    if not total:
        console.print("No mutants generated.")
        return
    families = [(f, summary.by_family[f]) for f in FAMILIES if f in summary.by_family]
    console.print(_table(f"Mutation pipeline over {len(summary.problems)} substrates", "family",
                         [*families, ("all", total)]))
    if by_rule:
        rules = sorted(summary.by_rule.items(), key=lambda kv: (FAMILIES.index(summary.rule_family[kv[0]]), kv[0]))
        console.print(_table("By rule", "rule", rules))
    generated = total["generated"]
    shares = ", ".join(f"{stage.replace('_', ' ')} {100 * total[stage] / generated:.1f}%"
                       for stage in STAGES[1:])
    console.print(f"{generated} mutants: {shares}.")
