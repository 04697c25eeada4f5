"""Commands that fill or move the kill matrix: run, refcheck, merge, runs."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.cli.params import SHARE, json_option, protocol_option

if TYPE_CHECKING:
    from kbm_toolkit.evaluation.shard import Shard


def _shard(_: click.Context, __: click.Parameter, value: str | None) -> Shard | None:
    """`--shard K/N` read by the library (OptionError: one line, the usage exit code)."""
    from kbm_toolkit.evaluation.shard import Shard

    return None if value is None else Shard.parse(value)


def _ray(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    """`--ray ADDRESS`, refused in one line (the usage exit code) before any work when Ray is not installed."""
    if value is not None:
        from kbm_toolkit.evaluation.ray_backend import require

        require()
    return value


@command("run")
@click.argument("problems", nargs=-1)
@click.option("--inputs", "source", default="official", show_default=True, metavar="SOURCE",
              help="Input specs: a protocol (its name from kbm adapters, an adapter folder or a protocol .toml), "
                   "official, gate, or a .toml/.jsonl file of spec records; several separated by commas.")
@click.option("--level", help="Every problem of this level that has mutants.")
@click.option("--sample", type=SHARE,
              help="Evaluate only this share of each problem's mutants (a fixed draw by id; a larger share "
                   "extends a smaller one). Scores are then over the sample.")
@click.option("--gpus", type=click.IntRange(1),
              help="GPUs to use, from device 0 [default: 1; with --ray, every GPU of the cluster].")
@click.option("--workers", type=click.IntRange(1), default=1, show_default=True,
              help="Workers per GPU, each on its own problems: one restarts after a crash while the others run. "
                   "A problem with an input too large to build beside the others' is finished last, alone.")
@click.option("--spares", type=click.IntRange(0),
              help="Warm workers each worker keeps ready to take over after a crash, each with a CUDA context "
                   "[default: 6 per GPU shared among its workers, at least 2 each].")
@click.option("--shard", metavar="K/N", callback=_shard,
              help="Only shard K of N (K from 0): whole problems, dealt in a fixed order, so N runs on copies "
                   "of one store split the work and `kbm merge` folds them (README: Beyond one machine).")
@click.option("--ray", "ray", metavar="ADDRESS", callback=_ray,
              help="Run the workers as Ray actors, one per GPU of the Ray cluster at ADDRESS (auto: the one "
                   "`ray start` runs here); this process compiles and writes the store. Needs the ray extra.")
@click.option("--arch", help="Compile for this target (default: the device's).")
@click.option("--no-probe", is_flag=True, help="Skip the tiny-input crash probe.")
@click.option("--rerun-crashers", is_flag=True,
              help="Run a mutant on every input even after it crashed or hung on one (each crash costs a restart).")
@protocol_option("--survivors-of", "survivors_of",
                 help="Only the mutants this protocol does not detect in the store (e.g. new inputs on what the "
                      "official check misses)")
@click.option("--witnessed", is_flag=True,
              help="With --survivors-of: only the survivors some built-in protocol detects (the knowledge "
                   "ladder's fixed denominator), not those no stored input has witnessed yet.")
@click.option("--first-kill", is_flag=True,
              help="Stop giving a mutant a protocol's inputs once that protocol detects it at every installed "
                   "protocol's tolerance: every audit, and every witness these cells give another protocol's, is "
                   "unchanged at about a third of the cells, but these mutants get no full rows, which suites "
                   "need (they use the share evaluated without this).")
@click.option("--checks-only", is_flag=True,
              help="Run no mutant: only check each input against the correct kernel, adding the margins "
                   "stored checks lack (e.g. against a protocol's TF32 reference: one launch per input at most).")
@click.option("--redo-overwritten", is_flag=True,
              help="Measure again, in place, the cells an evaluator before 2026-12-02 ran on an input after a "
                   "mutant had written over it and it was restored from copies the writer could reach (each "
                   "on its own stored input; --inputs is not used).")
@click.option("--dry-run", is_flag=True,
              help="Run nothing: count the cells the store lacks for this run (and the inputs it would check "
                   "first), the mutants it would compile and the problems they are on. No GPU needed; the "
                   "store is not written.")
@click.pass_obj
def run_cmd(obj: Context, problems: tuple[str, ...], source: str, level: str | None, sample: float | None,
            gpus: int, workers: int, arch: str | None, no_probe: bool, rerun_crashers: bool,
            survivors_of: str | None, witnessed: bool, first_kill: bool, checks_only: bool,
            redo_overwritten: bool, dry_run: bool, shard: Shard | None, ray: str | None, spares: int | None) -> None:
    """Evaluate every distinct mutant under a set of input specs: fill the kill matrix.

    Resumable: cells already in the store are skipped, so the same command continues a run that
    was interrupted (Ctrl-C, kill, crash).

    Example: kbm run --inputs kernelbench,kbv,fuzz --level level1 --sample 0.1
    """
    from kbm_toolkit.analysis.runs import largest_parts
    from kbm_toolkit.evaluation.fill import RunRequest, fill_matrix
    from kbm_toolkit.report.pipeline import progress_bar
    from kbm_toolkit.report.runs import replaced_lines

    store = obj.sometimes_writing_store(writes=not dry_run)  # a dry run plans on the shipped pool too
    request = RunRequest(source, problems, level, sample, gpus, workers, arch, not no_probe, rerun_crashers,
                         survivors_of, witnessed, first_kill, checks_only, redo_overwritten, shard=shard, ray=ray,
                         spares=spares, dry_run=dry_run)
    if dry_run:
        plan = fill_matrix(store, obj.problems(), request).planned
        n = plan.get("problems", 0)
        click.echo(f"Dry run: {plan.get('cells', 0):,} cells on checked inputs, {plan.get('mutants', 0):,} mutants "
                   f"to compile, on {n:,} problem{'' if n == 1 else 's'}; {plan.get('unchecked', 0):,} inputs to "
                   f"check first, with at most {plan.get('cells_unchecked', 0):,} cells more where they pass. "
                   "Nothing was run or stored.")
        return
    before = store.latest_run()
    try:
        with progress_bar() as progress:
            task = progress.add_task("cells", total=None)
            summary = fill_matrix(store, obj.problems(), request,
                                  on_progress=lambda done, total: progress.update(task, completed=done, total=total),
                                  on_problem=lambda key, verdict: progress.console.print(f"{key}: {verdict}"))
    except KeyboardInterrupt:
        run = store.run_after(before)
        click.echo(f"Stopped: run {run[0]} stored {run[1]:,} cells; the same command resumes from them."
                   if run else "Stopped before the run began.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    click.echo(f"{summary.cells} cells written, {len(summary.quarantined)} mutants quarantined on the probe, "
               f"{summary.restarts} worker restarts ({summary.waited_s:.1f} s waiting for a worker to start).")
    for line in replaced_lines(summary.replaced, shown=3):
        click.echo(line)
    split = summary.seconds
    if split.get("wall"):
        click.echo("workers' time: " + ", ".join(f"{k} {v / split['wall']:.0%}" for v, k in largest_parts(split)[:4])
                   + f" (kbm runs --run {store.latest_run()}: the whole split)")
    if any(v != "done" for v in summary.problems.values()):
        sys.exit(ExitCode.RUN_INCOMPLETE)


@command()
@click.argument("problems", nargs=-1)
@protocol_option("--adapter", "-a", "adapter", default="kernelbench", show_default=True,
                 help="The protocol whose inputs and tolerance are checked")
@click.option("--level", help="Every problem of this level that has a substrate.")
@json_option
@click.pass_obj
def refcheck(obj: Context, problems: tuple[str, ...], adapter: str, level: str | None, as_json: bool) -> None:
    """Check that a protocol can referee each problem: the reference against its own fp64 evaluation.

    Evaluates each problem's reference in fp32 and in fp64 on the protocol's inputs (on the GPU
    when there is one, else on the CPU) and flags problems whose fp32 reference misses fp64 by more
    than the tolerance (with how many output positions it gets wrong at that tolerance, and how
    many move past it when every floating input moves one ulp: rounding-sized changes), problems
    whose output is within the tolerance of zero on every input (an all-zeros kernel passes), and
    problems whose output is the same, bit for bit, on every input (it ignores its input). `kbm audit` leaves flagged problems out of its scores and lists
    them. A problem whose reference raises is an error, not `ok`: nothing was checked there (exit
    3). Checks already stored are kept, so the command resumes.

    Example: kbm refcheck -a kbv --level demo
    """
    from kbm_toolkit.evaluation.reference_check import refcheck as check

    store = obj.store()
    protocol = obj.protocol(adapter, store)
    result = check(store, obj.substrate_problems(problems, level), protocol)
    for key, why in result.stopped.items():
        click.echo(f"{key}: the reference check stopped: {why}", err=True)
    if as_json:
        click.echo(json.dumps({"protocol": protocol.name, "tolerance": protocol.tolerance, "device": result.device,
                               "problems": [{**r.__dict__, "verdict": r.verdict} for r in result.rows]}, indent=1))
    else:
        click.echo(f"{protocol.name} at {protocol.tolerance:g}, references in fp32 against fp64 on the "
                   f"{result.device.upper()}:")
        for r in result.rows:
            # the most on any one input ("up to"): the flag's reason names the input with the worst margin
            wrong = "" if r.wrong is None else (
                f", positions wrong: {_up_to(r.wrong)} of {r.positions:,}"
                + (f" (its inputs moved one ulp: {_up_to(r.moved)} move past {protocol.tolerance:g})" if r.moved is not None
                   else ""))
            click.echo(f"{r.verdict:<5} {r.problem:<48} " + (r.raised if r.verdict == "error" else
                       f"{r.inputs} inputs, fp64 margin {r.worst_fp64_margin:.1e}{wrong}, max |ref| {r.largest_ref:.1e}"
                       + (f": {r.flag}" if r.verdict == "flag" else "")))
        flagged = sum(r.verdict == "flag" for r in result.rows)
        click.echo(f"{flagged} of {len(result.rows)} problems cannot be refereed by {protocol.name}; "
                   "kbm audit leaves them out.")
    errors = [r for r in result.rows if r.verdict == "error"]
    if errors:
        click.echo(f"Error: the reference raised on {len(errors)} problems ({errors[0].problem}: {errors[0].raised})",
                   err=True)
        sys.exit(ExitCode.BAD_INPUT)


def _up_to(count: int) -> str:
    """A count that is the most on any one input."""
    return f"up to {count:,}" if count else "0"


@command()
@click.argument("others", nargs=-1, required=True)
@click.pass_obj
def merge(obj: Context, others: tuple[str, ...]) -> None:
    """Copy into the store every row it lacks from other stores (e.g. shards filled on other GPUs).

    Runs keep their provenance and are re-numbered; rows the store already has are kept.

    Example: kbm --store pool.db merge shard-a.db shard-b.db    or    kbm --store mine.db merge @kernelbench
    """
    from kbm_toolkit.store.shipped import open_source

    store = obj.store()
    for ref in others:
        added = store.merge(open_source(ref))
        words = ", ".join(f"{n} {table}" for table, n in added.items() if n) or "nothing new"
        click.echo(f"{ref}: {words}")


@command("runs")
@click.option("--run", "run_id", type=click.IntRange(1), help="Only this run, with where its workers' time went.")
@json_option
@click.pass_obj
def runs_cmd(obj: Context, run_id: int | None, as_json: bool) -> None:
    """List the store's runs: kind, GPU, date, cells and input checks written, wall time, cells per second.

    With --run N, where that evaluation's worker time went (launches, comparing, waiting for a
    spare worker, building inputs, references...), as the run measured it, and which problems spent
    the most time outside launches, on what.

    Example: kbm runs    or    kbm --store @kernelbench runs --run 43
    """
    from kbm_toolkit.analysis.runs import run_rows, time_split
    from kbm_toolkit.report.runs import print_runs, print_split

    store = obj.read_store("runs")
    if run_id is None:
        rows = run_rows(store)
        click.echo(json.dumps(rows, indent=1)) if as_json else print_runs(rows)
    else:
        split = time_split(store, run_id)
        click.echo(json.dumps(split, indent=1)) if as_json else print_split(split)


COMMANDS = [run_cmd, refcheck, merge, runs_cmd]
