"""Commands about rules and mutants: rules, mutate, equivalence, mutants, show."""

from __future__ import annotations

import json
import sys

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.cli.params import json_option
from kbm_toolkit.vocabulary import FAMILIES, OTHER_CODE, SAME_CODE, MutantStatus


@command("rules")
@click.option("--family", type=click.Choice(FAMILIES), help="Only this family.")
@click.option("--sites", "count_sites", is_flag=True,
              help="Count each rule's sites over every substrate here, kbm's and the packs' (no compiling).")
@json_option
@click.pass_obj
def rules_cmd(obj: Context, family: str | None, count_sites: bool, as_json: bool) -> None:
    """List the mutation rules: name, family, description, and optionally their sites.

    Example: kbm rules --family precision --sites
    """
    from kbm_toolkit.mutation.rules import load_rules, site_counts

    rules = [r for r in load_rules() if family is None or r.family == family]
    sites, substrates = site_counts(rules, obj.problems()) if count_sites else ({}, 0)
    if as_json:
        click.echo(json.dumps([{"name": r.name, "family": r.family, "target": r.target, "description": r.description,
                                **({"sites": sites[r.name]} if count_sites else {})} for r in rules], indent=1))
        return
    for r in rules:
        count = f"{sites[r.name]:>6}  " if count_sites else ""
        click.echo(f"{count}{r.family:<16} {r.name:<40} {r.description}")
    click.echo(f"{len(rules)} rules" + (f" over {substrates} substrates" if count_sites else ""))


@command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Mutate every gated substrate of this level.")
@click.option("--arch", help="Compile for this target (default sm_90).")
@click.option("--rule", "rule_names", multiple=True, help="Only these rules (repeatable).")
@click.option("--workers", type=click.IntRange(1), help="Compiling processes (default: one per core).")
@click.option("--ungated", is_flag=True, help="Also mutate substrates with no passing gate verdict.")
@click.option("--unplaced", is_flag=True,
              help="Run each kernel mutant of a network at every launch of its kernel, not at one launch per "
                   "quartile of depth: a fused generated kernel's fault, to set beside the placed ones (into "
                   "a store of its own).")
@click.pass_obj
def mutate(obj: Context, problems: tuple[str, ...], level: str | None, arch: str | None,
           rule_names: tuple[str, ...], workers: int | None, ungated: bool, unplaced: bool) -> None:
    """Turn gated substrates into mutants, compile them all, and record them in the store.

    Prints the pipeline summary (generated, non-compiling, duplicate, equivalent, distinct) in
    total, by family and by rule. Exits 3 when no selected substrate could be mutated (none gated
    at its current source, or none has a substrate).

    Example: kbm mutate --level demo
    """
    from kbm_toolkit.cuda.nvrtc import DEFAULT_ARCH
    from kbm_toolkit.mutation.campaign import mutate_problems
    from kbm_toolkit.report.pipeline import print_summary, progress_bar

    store = obj.store()
    selected = obj.substrate_problems(problems, level)
    with progress_bar() as progress:
        summary = mutate_problems(store, selected, arch or DEFAULT_ARCH, rule_names or None, workers,
                                  require_gate=not ungated, progress=progress, placed=not unplaced)
    print_summary(summary)
    if not summary.problems:
        key, why = next(iter(summary.skipped.items()), ("", "nothing selected"))
        click.echo(f"Error: nothing to mutate: none of the {len(selected)} selected substrates could be mutated "
                   f"({key}: {why})", err=True)
        sys.exit(ExitCode.BAD_INPUT)


@command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Every problem of this level with a substrate.")
@click.option("--arch", help="Compile for this target (default sm_90).")
@click.option("--workers", type=click.IntRange(1), help="Judging processes (default: one per core).")
@click.option("--inputs", "source", metavar="SOURCE",
              help="Also judge at the shapes of these inputs (a protocol, as `kbm run --inputs` takes it), "
                   "right after the official one, so every mutant is decided at each of them: before they "
                   "run, `kbm run` then launches no pair proven the same; after, the audit's shape-bound "
                   "count for the protocol is whole.")
@json_option
@click.pass_obj
def equivalence(obj: Context, problems: tuple[str, ...], level: str | None, arch: str | None,
                workers: int | None, source: str | None, as_json: bool) -> None:
    """Prove which mutants no values at an input's shapes can witness, without a GPU.

    For each distinct mutant and each shape its problem's inputs build (the official one, then
    those of every input the store found valid), the launcher runs on meta tensors; each kernel the
    mutant changed is compiled once per launch with that launch's sizes and scalars written in. The
    same machine code as the original's (for a launcher mutant: the same launches) is a proof that
    no values at that shape can witness it. Verdicts go to the store; mutants already settled are
    not judged again, and `kbm run` launches no mutant at an input whose shapes it was proven the
    same at (its outcome is the correct kernel's). Prints, per family, those that run the
    original's code at the official shapes and at every valid input's shapes.

    Example: kbm --store kb.db equivalence --level level1
    """
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.shape_bound import equivalence_table
    from kbm_toolkit.cuda.nvrtc import DEFAULT_ARCH
    from kbm_toolkit.evaluation.input_sources import resolve
    from kbm_toolkit.mutation.shape_equivalence import NO_MUTANTS, judge_problems
    from kbm_toolkit.report.pipeline import progress_bar

    store = obj.store()
    selected = obj.substrate_problems(problems, level)
    extra = resolve(source, obj.problems().problems(), store.protocol_toml) if source else None
    with progress_bar() as progress:
        task = progress.add_task("judging problems", total=len(selected))
        judged = judge_problems(store, selected, arch or DEFAULT_ARCH, workers,
                                on_problem=lambda key, n: progress.advance(task), extra=extra)
    keys = {p.key for p in selected}
    table = equivalence_table([mx for mx in load_matrices(store, floor=float("inf")) if mx.problem.key in keys])
    if as_json:
        click.echo(json.dumps({"judged": judged.judged, "settled": judged.settled, "skipped": judged.skipped,
                               "families": {f: dict(c) for f, c in table}}, indent=1))
        return
    named = {p.key for p in selected} if problems else set()
    for key, why in judged.skipped.items():  # unnamed problems without mutants here are only counted
        if key in named or not why.startswith(NO_MUTANTS):
            click.echo(f"skipped {key}: {why}")
    unmutated = sum(k not in named and why.startswith(NO_MUTANTS) for k, why in judged.skipped.items())
    if unmutated:
        click.echo(f"({unmutated} of the selected problems have no distinct mutants here)")
    if not judged.judged and not judged.settled:
        click.echo("Error: nothing judged: no selected problem has distinct mutants here (kbm mutate)", err=True)
        sys.exit(ExitCode.BAD_INPUT)
    click.echo(f"Judged {sum(judged.judged.values()):,} mutants of {len(judged.judged)} problems"
               f" ({judged.settled:,} settled before).")
    click.echo(f"{'family':<16} {'distinct':>9} {'judged':>8} {'same code, official shapes':>28} "
               f"{'every valid input':>18} {'undecided':>10}")
    for family, c in table:
        click.echo(f"{family:<16} {c['distinct']:>9,} {c['judged']:>8,} {c['official']:>28,} {c['every']:>18,} "
                   f"{c['undecided']:>10,}")


@command("mutants")
@click.option("--problem", help="Only this problem (key or unambiguous name).")
@click.option("--rule", help="Only this rule (kbm rules).")
@click.option("--family", type=click.Choice(FAMILIES), help="Only this family.")
@click.option("--status", type=click.Choice([*MutantStatus.values(), "crash_probe"]), metavar="STATUS",
              help=f"Only mutants in this status: {', '.join(MutantStatus.values())}.")
@json_option
@click.pass_obj
def mutants_cmd(obj: Context, problem: str | None, rule: str | None, family: str | None,
                status: str | None, as_json: bool) -> None:
    """List mutants in the store: id, status and name.

    Reads your store, or the store shipped with kbm when yours has no mutants yet.

    Example: kbm mutants --problem demo/2 --family precision
    """
    from kbm_toolkit.analysis.listing import mutant_listing, stored_problem

    store = obj.read_store("mutants")
    key = stored_problem(obj.problems(), store, problem) if problem else None
    rows = mutant_listing(store, key, rule, family, status)
    if as_json:
        fields = ("id", "problem", "rule", "family", "status", "name", "duplicate_of")
        click.echo(json.dumps([{k: r[k] for k in fields} for r in rows], indent=1))
        return
    count = 0
    for row in rows:
        count += 1
        click.echo(f"{row['id']}  {row['status']:<13} {row['name']}")
    click.echo(f"{count} mutants")


@command()
@click.argument("mutant_id")
@click.pass_obj
def show(obj: Context, mutant_id: str) -> None:
    """Show one mutant: rule, family, description, site, unified diff, and the shapes where it runs
    the original's code (`kbm equivalence`).

    Reads your store, or the store shipped with kbm when yours has no mutants yet.

    Example: kbm show 3f2a9c1b
    """
    from kbm_toolkit.analysis.listing import mutant_record

    row = mutant_record(obj.read_store("mutants"), mutant_id)
    click.echo(f"mutant   {row['id']}\n{row['name']}")
    click.echo(f"rule     {row['rule']} ({row['family']}): {row['rule_row']['description']}")
    status = row["status"] + (f" of {row['duplicate_of']}" if row["duplicate_of"] else "")
    click.echo(f"status   {status}" + (f": {row['message']}" if row["message"] else ""))
    if row["shapes"]:  # kbm equivalence's verdicts: in order of judging, official first
        same = sum(v == SAME_CODE for v in row["shapes"].values())
        other = next((s for s, v in row["shapes"].items() if v == OTHER_CODE), None)
        click.echo(f"shapes   the original's machine code at {same} of {len(row['shapes'])} judged"
                   + (f"; other code at {other}" if other else "") + " (kbm equivalence)")
    click.echo("")
    click.echo(row["diff"].rstrip())


COMMANDS = [rules_cmd, mutate, equivalence, mutants_cmd, show]
