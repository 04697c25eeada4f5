"""The audit as a person reads it: provenance first, then the score and where the misses live."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from kbm_toolkit.report import terminal


def provenance(store: Any) -> str:
    """Which GPUs and dates the cells come from (the audit's first line)."""
    rows = store.cell_provenance()
    where = f"store {store.path}" if store.path else "in-memory store"
    if not rows:
        return f"No cells in the {where}: nothing has been evaluated yet."
    parts = [f"{r['gpu'] or 'unknown GPU'} ({r['first'][:10]}" + (f" to {r['last'][:10]}" if r["last"][:10] != r["first"][:10] else "")
             + f", {r['runs']} run{'s' if r['runs'] > 1 else ''})" for r in rows]
    return f"Cells from {', '.join(parts)}; {where}."


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}%"


def share_pct(share: float) -> str:
    """A sampled share as a percentage, with the digits a share under 1% needs (0.5%, not 0%)."""
    return f"{share * 100:.2g}%" if share < 0.01 else f"{share:.0%}"


def sample_words(sample: dict[str, Any]) -> str:
    """The evaluated share in words: `a 60% sample of each problem's`, naming the shares when an
    interrupted wider run left some problems ahead of others."""
    at = sample.get("problems_at") or []
    if len(at) <= 1:
        return f"a {share_pct(sample['share'])} sample of each problem's"
    return (f"a {share_pct(sample['least'])[:-1]}–{share_pct(sample['share'])} sample of each problem's ("
            + ", ".join(f"{n} problem{'s' if n > 1 else ''} at {share_pct(f)}" for f, n in at)
            + f"; --sample {sample['least']:g} scores all alike)")


def incomplete_words(report: dict[str, Any]) -> str:
    """"" when the protocol's score is over all of its cells; else how much of it is missing, in words
    that belong beside the score ("incomplete: 3,797 of its inputs never checked on 194 problems")."""
    words = missing_words(report["missing"]["checks"], report["missing"]["cells"])
    return f"incomplete: {words}" if words else ""


def open_words(report: dict[str, Any]) -> str:
    """"" when every denominator protocol has run on every mutant none witnesses; else how many it
    has not, in words that belong beside the denominator ("witness search open: …")."""
    found = report.get("witness_search_open") or {}
    if not found.get("mutants"):
        return ""
    by = ", ".join(f"{name} {n:,}" for name, n in found["by"].items())
    lack = "lacks" if found["mutants"] == 1 else "lack"
    return (f"witness search open: {counted(found['mutants'], 'mutant')} no protocol witnesses {lack} cells or "
            f"checks that could ({by}), so the denominator may grow")


def counted(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless one: "1 problem", "3,797 mutants"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def missing_words(checks: dict[str, list[str]], cells: dict[str, int]) -> str:
    """What a protocol's score lacks (`ProtocolResult.missing_checks`, `.missing_cells`) in words:
    "3,797 of its inputs never checked on 194 problems"; "" when it lacks nothing."""
    inputs, missing = sum(map(len, checks.values())), sum(cells.values())
    if not inputs and not missing:
        return ""
    parts = ([f"{inputs:,} of its inputs never checked"] if inputs else []) + ([f"{missing:,} cells missing"] if missing else [])
    return " and ".join(parts) + f" on {counted(len(set(checks) | set(cells)), 'problem')}"


def _print_as_run(console: Any, report: dict[str, Any]) -> None:
    """The false rejections the protocol's benchmark makes with its own reference (TF32, say)."""
    as_run = report.get("as_run")
    if not as_run:
        return
    problems = as_run["problems"]
    console.print(f"False rejections as the benchmark runs it ({as_run['reference']} reference): the correct kernel "
                  f"fails {as_run['inputs']} inputs on {len(problems)} problems"
                  + (f"; {as_run['unmeasured_inputs']:,} inputs have no {as_run['reference']} margin stored "
                     "(`kbm run --checks-only --inputs PROTOCOL` on a GPU measures them)" if as_run["unmeasured_inputs"] else ""))
    for key, p in list(problems.items())[:20]:
        console.print(f"  {key}: {p['inputs']} input{'s' if p['inputs'] > 1 else ''}, worst margin {p['worst_margin']:.2e}")
    if as_run.get("cells_judged_strict"):
        console.print(f"  ({as_run['cells_judged_strict']:,} passing cells have no {as_run['reference']} margin: "
                      "judged against the strict-fp32 reference)")


def print_audit(report: dict[str, Any], first_line: str, fill_command: str | None = None) -> None:
    """The audit report on the terminal; `fill_command`, the `kbm run` that fills what it lacks."""
    console = terminal.console(width=100)
    console.print(first_line)
    judging = report.get("judging") or f"allclose atol = rtol = {report['tolerance']:g}"
    console.print(f"[bold]{report['protocol']}[/bold]: {report['description']} (judged by {judging})")
    if report.get("note"):  # where the protocol's inputs come from, when that depends on this machine
        console.print(report["note"], markup=False, soft_wrap=True)  # one line, for people who grep
    undecided = report.get("undecided") or {}
    if undecided.get("cells") or undecided.get("checks"):
        console.print(f"[yellow]Undecided by the stored margins:[/yellow] {undecided['cells']:,} cells (scored as "
                      f"passing: detection is a lower bound) and {undecided['checks']:,} inputs (left out); "
                      "cells evaluated by this kbm store the margins that decide them.")
    suspect = report.get("overwrite_suspects")
    if suspect:
        console.print(f"[yellow]Measured after an overwrite:[/yellow] {suspect:,} cells of this store ran after a mutant "
                      "had written over an input of the same problem and run, which an evaluator before 2026-12-02 "
                      "restored from copies the writer could reach; `kbm run --redo-overwritten` measures them again.")
    sample = report.get("sample")
    if sample:
        console.print(f"Mutants: {sample_words(sample)}: {sample['mutants']:,} of "
                      f"{sample['distinct']:,} distinct, {sample['problems']} problems (`kbm run --sample`).")
    n = report["witnessed"]
    if not n:
        console.print("No witnessed mutants: evaluate some first (`kbm run`).")
    else:
        lo, hi = report["band90_pct"]
        incomplete, search = incomplete_words(report), open_words(report)
        console.print(f"Detects [bold]{_pct(report['detection_pct'])}[/bold] of {report['denominator_words']}; "
                      f"misses {report['missed']:,} (90% band of detection {_pct(lo)}–{_pct(hi)} over problems)"
                      + (f" [yellow]({incomplete})[/yellow]" if incomplete else "") + "."
                      + (f" [yellow]{search[0].upper()}{search[1:]}.[/yellow]" if search else ""))
    bound = report.get("shape_bound")
    if n and bound and bound["mutants"]:
        console.print(f"Shape-bound: {bound['bound']:,} of the {bound['mutants']:,} misses "
                      f"({_pct(100.0 * bound['bound'] / bound['mutants'])}) run the original's machine code at every "
                      f"shape {report['protocol']}'s inputs build (`kbm equivalence`): no values and no tolerance "
                      "at those shapes can catch them, only another shape"
                      + (f"; {bound['unjudged']:,} not judged yet" if bound["unjudged"] else "") + ".")
    if "vs" in report:
        vs = report["vs"]
        # vs's detection is over this audit's denominator, not vs's own: `kbm audit -a VS` may differ
        console.print(f"vs {vs['protocol']} ({_pct(vs['detection_pct'])} of the same {n:,}): "
                      f"{vs['gain_points']:+.1f} points = "
                      f"{vs['inputs_points']:+.1f} from inputs "
                      + ("" if vs.get("reference_points") is None else f"{vs['reference_points']:+.1f} from reference ")
                      + f"{vs['tolerance_points']:+.1f} from tolerance; "
                      f"kills {vs['survivors_killed']:,} of the {vs['survivors']:,} of these {vs['protocol']} misses"
                      + (f" ({_pct(vs['survivors_killed_pct'])})" if vs["survivors"] else ""))
        ladder = vs.get("ladder")
        if ladder and ladder["all_survivors"]["survivors"]:
            every, others, base = ladder["all_survivors"], ladder["witnessed_by_others"], ladder["baseline"]
            console.print(
                f"Knowledge ladder, like for like: of the {every['survivors']:,} mutants {vs['protocol']} lets through "
                f"that both {report['protocol']} and {base} ran on, witnessed or not (as the paper's rungs count), "
                f"{report['protocol']} kills {_pct(every['killed_pct'])} and {base} {_pct(every['fuzz_killed_pct'])} "
                "(the paper: its taxonomy-guided LLM 61.0%, random fuzz 21.6% of 1,154)"
                + (f"; of the {others['survivors']:,} that another protocol's input witnesses, {_pct(others['killed_pct'])} and "
                   f"{_pct(others['fuzz_killed_pct'])}" if others["survivors"] else "") + ".")
    if report["families"]:
        table = Table(title="By family", title_justify="left")
        bound_by = (bound or {}).get("families") or {}
        for col in ("family", "witnessed", "missed", "missed %", *(("shape-bound",) if bound_by else ())):
            table.add_column(col, justify="left" if col == "family" else "right")
        for family, f in report["families"].items():
            table.add_row(family, f"{f['witnessed']:,}", f"{f['missed']:,}", _pct(f["missed_pct"]),
                          *((f"{bound_by.get(family, [0, 0])[1]:,}",) if bound_by else ()))
        console.print(table)
    for title, key, name in (("Worst problems", "worst_problems", "problem"), ("Worst rules", "worst_rules", "rule")):
        rows = [r for r in report[key] if r["missed"]]
        if rows:
            table = Table(title=title, title_justify="left")
            for col in (name, "witnessed", "missed", "missed %"):
                table.add_column(col, justify="left" if col == name else "right")
            for r in rows:
                table.add_row(r[name], str(r["witnessed"]), str(r["missed"]), _pct(r["missed_pct"]))
            console.print(table)
    rejections = report["false_rejections"]
    console.print(f"False rejections (inputs on which the correct kernel fails): {len(rejections)}"
                  + (f"; {report['dropped_inputs']} inputs dropped (reference raised or non-finite)" if report["dropped_inputs"] else ""))
    for r in rejections[:10]:
        margin = "inf" if r["margin"] is None else f"{r['margin']:.2e}"
        console.print(f"  {r['problem']}  {r['label']}  margin {margin}" + (f"  ({r['note']})" if r["note"] else ""))
    _print_as_run(console, report)
    if report.get("excluded"):
        console.print(f"[yellow]Left out[/yellow] (the protocol cannot referee them; `kbm refcheck`): "
                      f"{len(report['excluded'])} problems")
        for key, why in list(report["excluded"].items())[:10]:
            console.print(f"  {key}: {why}")
    for name, problems in report.get("unavailable", {}).items():
        console.print(f"[yellow]{name} could not build inputs for {len(problems)} problems[/yellow] "
                      f"(e.g. {next(iter(problems.values()))}): its inputs need their constants, which this store "
                      "did not record (it predates them), and their files are not at the paths it holds.")
    checks, cells = report["missing"]["checks"], report["missing"]["cells"]
    if checks or cells:
        problems = sorted(set(checks) | set(cells))
        console.print(f"[yellow]Not yet evaluated:[/yellow] {sum(map(len, checks.values()))} inputs and "
                      f"{sum(cells.values())} cells on {len(problems)} problems."
                      + (" Fill them on a GPU with:" if fill_command else ""))
        if fill_command:  # one line, as typed: never wrapped, no markup read into a path
            console.print(f"  {fill_command}", soft_wrap=True, markup=False, highlight=False)


def print_unified(report: dict[str, Any], first_line: str) -> None:
    """`kbm audit --all` on the terminal: one denominator, every protocol's detection on it."""
    console = terminal.console(width=100)
    console.print(first_line)
    sample = report.get("sample")
    if sample:
        console.print(f"Mutants: {sample_words(sample)}: {sample['mutants']:,} of {sample['distinct']:,} distinct.")
    console.print(f"One denominator for every protocol: {report['denominator_words']} "
                  f"({report['problems']} problems; {len(report['excluded'])} left out, some protocol cannot referee them).")
    table = Table(title="Detection on it", title_justify="left")
    for col in ("protocol", "tolerance", "detects", "90% band", "false rejections"):
        table.add_column(col, justify="left" if col == "protocol" else "right")
    for r in report["protocols"]:
        lo, hi = r["band90_pct"]
        incomplete = incomplete_words(r)
        table.add_row(r["protocol"] + (f" ({incomplete})" if incomplete else ""), f"{r['tolerance']:g}",
                      _pct(r["detection_pct"]), f"{_pct(lo)}–{_pct(hi)}", str(r["false_rejections"]))
    console.print(table)
