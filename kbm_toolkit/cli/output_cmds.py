"""Commands that show or hand over what the store holds: report, export, tui, adapters."""

from __future__ import annotations

import json
from dataclasses import replace
import sys
from pathlib import Path
from typing import Any

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.judging import REFERENCES
from kbm_toolkit.cli.params import SHARE, accounting_option, json_option, out_option, protocol_option


@command()
@out_option("Folder for the figures and index.html (made if missing).")
@click.option("--tables", is_flag=True,
              help="Print Table 1 (the pipeline) and Table 2 (families) as Markdown instead; the first protocol is "
                   "the official one.")
@protocol_option("--adapter", "-a", "adapters", multiple=True,
                 help="Protocols to compare (default: every installed one; with --tables, kernelbench, kbv and fuzz)")
@click.option("--sample", type=SHARE,
              help="Score only this share of each problem's mutants (at most the store's; samples nest, so a "
                   "wider store reproduces a narrower one's figures).")
@click.option("--reference", type=click.Choice(REFERENCES),
              help="With --tables: judge every protocol against this reference instead of its own.")
@protocol_option("--denominator", "denominator", multiple=True,
                 help="Protocols whose detections define the witnessed mutants, e.g. a `kbm targets` folder beside "
                      "the built-in ones (default: every installed one and every one the store keeps)")
@accounting_option()
@click.pass_obj
def report(obj: Context, out: str | None, tables: bool, adapters: tuple[str, ...], sample: float | None,
           reference: str | None, denominator: tuple[str, ...], accounting: Any) -> None:
    """Draw the figures (PNG and SVG) and an HTML page with the pipeline and family tables.

    Figures, each subtitled with the store, its cells' dates and the accounting: missed % by
    family per protocol; the per-problem sorted miss curve (the worst problems named); the miss
    patterns (UpSet); the official check's 90% band against the number of problems; the budget
    curve with the official inputs' line; the full-coverage suite size per problem; the correct
    kernel's noise against input scale (the ceiling checks); the blind band (output magnitude
    against each tolerance); for level 3, survival by launch count and
    depth. The page adds Tables 1, 2 and 6.

    Example: kbm report --out report/    or    kbm report --tables -a kernelbench -a kbv
    """
    from kbm_toolkit.report.audit import provenance

    store = obj.read_store()
    if tables:
        from kbm_toolkit.report.tables import tables_markdown

        chosen = obj.protocols(adapters or ("kernelbench", "kbv", "fuzz"), store)
        witnesses = obj.witnesses(denominator, store)
        click.echo(f"{provenance(store)}\n\n{tables_markdown(store, chosen, witnesses, sample, reference, accounting)}")
        return
    if out is None:
        raise click.UsageError("give --out DIR for the figures, or --tables for the Markdown tables")
    from kbm_toolkit.report.figures import write_report

    page = write_report(store, obj.protocols(adapters, store), Path(out), sample=sample,
                        denominator=obj.witnesses(denominator, store), accounting=accounting)
    click.echo(f"{provenance(store)}\nwrote {page}")


@command()
@click.argument("problems", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["stryker", "kernelbench"]), default="stryker", show_default=True,
              help="stryker: the mutation-testing-elements JSON report (schema version 2); kernelbench: mutants as "
                   "KernelBench submissions (ModelNew files) in a run folder, for kbm verify or any harness.")
@protocol_option("--adapter", "-a", "adapter", default="kernelbench", show_default=True,
                 help="stryker: the protocol whose verdicts the report shows")
@click.option("--mutant", "mutants", multiple=True, metavar="ID",
              help="kernelbench: this stored mutant (repeatable; its problem is taken from the store).")
@click.option("--per-problem", type=click.IntRange(1),
              help="kernelbench: a fixed hash-drawn number of each problem's distinct mutants [default: all].")
@click.option("--level", help="kernelbench: every problem of this level with mutants in the store.")
@click.option("--no-control", is_flag=True, help="kernelbench: leave out the correct substrate (sample 0).")
@out_option("stryker: write here instead of standard output (a file); kernelbench: the folder to write (made if "
            "missing).", folder=None)
@protocol_option("--denominator", "denominator", multiple=True,
                 help="stryker: protocols whose detections define the witnessed mutants (default: every installed "
                      "one and every one the store keeps)")
@accounting_option()
@click.pass_obj
def export(obj: Context, problems: tuple[str, ...], fmt: str, adapter: str, mutants: tuple[str, ...],
           per_problem: int | None, level: str | None, no_control: bool, out: str | None,
           denominator: tuple[str, ...], accounting: Any) -> None:
    """Export the store in a standard format: a report for the mutation-testing HTML viewer, or
    mutants as KernelBench submissions.

    stryker: Killed: witnessed and detected; Survived: witnessed but missed; CompileError;
    RuntimeError: quarantined on the probe; Ignored: equivalent, duplicate, unwitnessed, or of a
    problem the protocol cannot referee. The viewer's score is then kbm audit's detection; the
    report's config names the denominator.

    kernelbench: each mutant as a file defining ModelNew (the problem's Model for its weights,
    the mutant's kernel through kbm's launcher), named level_{L}_problem_{id}_sample_{s}_kernel.py,
    sample 0 the correct substrate; kbm-submissions.json says which mutant each file runs. A
    corpus whose verdicts the store knows: check a checker, or kbm verify itself, against them.

    Example: kbm export --format stryker --adapter kbv --out report.json
    Example: kbm export --format kernelbench level1/19 --per-problem 20 --out corpus/
    """
    if fmt == "kernelbench":
        _export_corpus(obj, problems, mutants, per_problem, level, not no_control, out)
        return
    if problems or mutants or per_problem or level or no_control:
        raise click.UsageError("PROBLEMS, --mutant, --per-problem, --level and --no-control are for "
                               "--format kernelbench")
    from kbm_toolkit.report.stryker import export as write_export

    store = obj.read_store()
    done = write_export(store, obj.protocol(adapter, store), obj.witnesses(denominator, store),
                        Path(out) if out else None, accounting)
    if out:
        click.echo(f"wrote {out}: {done.mutants} mutants in {done.files} files")
    else:
        click.echo(done.text)
    if done.left_out:  # their diffs apply to a substrate as it was, not to the one shipped now
        click.echo(f"left out {done.left_out} mutants made from a substrate that has changed since, or that is not "
                   "shipped with kbm (`kbm mutate` remakes them)", err=True)


def _export_corpus(obj: Context, problems: tuple[str, ...], mutants: tuple[str, ...], per_problem: int | None,
                   level: str | None, control: bool, out: str | None) -> None:
    """`kbm export --format kernelbench`: the chosen mutants as a folder of submissions."""
    from kbm_toolkit.conformance.corpus import export_corpus

    if out is None:
        raise click.UsageError("--format kernelbench writes a folder of files: give --out DIR")
    store = obj.read_store()
    keys = set(problems)
    rows = [store.mutant(m) for m in mutants]  # an id or a unique prefix; an unknown one is one line
    mutants = tuple(r["id"] for r in rows)
    if mutants:
        keys |= {r["problem"] for r in rows}
    elif not problems:
        keys = {k for k in store.problems_with_mutants()}
    chosen = [p for p in (obj.problems().get(k) for k in sorted(keys)) if level is None or p.level == level]
    corpus = export_corpus(store, chosen, out, per_problem, mutants or None, control)
    for what, why in corpus.left_out.items():
        click.echo(f"left out {what}: {why}", err=True)
    click.echo(f"wrote {len(corpus.written)} submissions of {len({e.problem for e in corpus.written})} problems to "
               f"{corpus.folder}: kbm verify {corpus.folder}")


@command()
@click.argument("store_path", required=False, type=click.Path(dir_okay=False))
@protocol_option("--adapter", "-a", "adapters", multiple=True, help="Protocols to show (default: every installed one)")
@protocol_option("--denominator", "denominator", multiple=True,
                 help="Protocols whose detections define the witnessed mutants (default: every installed one and "
                      "every one the store keeps)")
@accounting_option()
@click.pass_obj
def tui(obj: Context, store_path: str | None, adapters: tuple[str, ...], denominator: tuple[str, ...],
        accounting: Any) -> None:
    """Browse a store in the terminal: overview, miss patterns, problems, mutant details, submissions.

    Keys: o overview, p patterns, r problems, s submissions (kbm verify's), enter to open, escape
    to go back, / to filter, t to change protocol, q to quit. Needs a terminal: with its output
    piped it exits at once.

    Example: kbm tui ~/.local/share/kbm/kbm.db
    """
    if store_path:
        obj.use_store(store_path)
    store = obj.read_store()  # a store that is not there is one line, terminal or not
    protocols = obj.protocols(adapters, store)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        click.echo("Error: kbm tui needs a terminal (its input or output is not one); "
                   "kbm audit and kbm report print the same figures", err=True)
        sys.exit(ExitCode.USAGE)
    from kbm_toolkit.tui.app import KbmApp

    KbmApp(store.path, protocols, accounting, obj.witnesses(denominator, store)).run()


@command("adapters")
@json_option
@click.pass_obj
def adapters_cmd(obj: Context, as_json: bool) -> None:
    """List the installed protocols, then those the store keeps (adapter `store`): adapter, name,
    tolerance (atol/rtol where they differ), reference, description.

    Example: kbm --store @kernelbench adapters
    """
    from kbm_toolkit.errors import KbmError
    from kbm_toolkit.protocols.protocol import stored_protocol
    from kbm_toolkit.protocols.registry import installed, refused_adapters, shadowed

    for line in [*refused_adapters().values(), *shadowed()]:
        click.echo(f"Warning: {line}", err=True)
    rows = list(installed())
    store = obj.read_store()
    for name in store.protocol_names():  # kept by `kbm run --inputs PATH` or `kbm targets --emit`
        try:
            rows.append(("store", replace(stored_protocol(name, store.protocol_toml(name) or ""),
                                          path=f"{store.where}#{name}")))
        except KbmError as e:
            click.echo(f"Warning: {e.line()}", err=True)
    if as_json:
        click.echo(json.dumps([{"adapter": a, "name": p.name, "tolerance": p.tolerance, "atol": p.judge.atol,
                                "rtol": p.judge.rtol, "comparison": p.judge.comparison, "reference": p.judge.reference,
                                "description": p.description, "path": p.path} for a, p in rows], indent=1))
        return
    for name, p in rows:
        j = p.judge
        tolerance = f"{j.atol:g}" if j.atol == j.rtol else f"{j.atol:g}/{j.rtol:g}"
        click.echo(f"{name:<14} {p.name:<18} {tolerance:<12} {j.reference:<16} {p.description}")


COMMANDS = [report, export, tui, adapters_cmd]
