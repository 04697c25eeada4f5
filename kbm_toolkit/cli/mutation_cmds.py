"""Commands about rules and mutants: rules, mutate, mutants, show."""

from __future__ import annotations

import json
import sys

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.cli.params import json_option
from kbm_toolkit.vocabulary import FAMILIES, MutantStatus


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
    """Show one mutant: rule, family, description, site and unified diff.

    Reads your store, or the store shipped with kbm when yours has no mutants yet.

    Example: kbm show 3f2a9c1b
    """
    from kbm_toolkit.analysis.listing import mutant_record

    row = mutant_record(obj.read_store("mutants"), mutant_id)
    click.echo(f"mutant   {row['id']}\n{row['name']}")
    click.echo(f"rule     {row['rule']} ({row['family']}): {row['rule_row']['description']}")
    status = row["status"] + (f" of {row['duplicate_of']}" if row["duplicate_of"] else "")
    click.echo(f"status   {status}" + (f": {row['message']}" if row["message"] else ""))
    click.echo("")
    click.echo(row["diff"].rstrip())


COMMANDS = [rules_cmd, mutate, mutants_cmd, show]
