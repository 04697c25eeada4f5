"""Commands that score and improve a protocol: audit, suite, targets."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import replace
from typing import Any

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.cli.params import PERCENT, SHARE, TOLERANCE, accounting_option, json_option, out_option, protocol_option
from kbm_toolkit.errors import ProblemError
from kbm_toolkit.judging import REFERENCES
from kbm_toolkit.outputs import output_folder
from kbm_toolkit.store import Store
from kbm_toolkit.store.shipped import DEFAULT_SHIPPED, shipped_name


@command()
@protocol_option("--adapter", "-a", "adapter", help="The protocol to audit (or --all)")
@click.option("--all", "every", is_flag=True,
              help="Score every protocol (--denominator's, default every installed one and every one the store "
                   "keeps) on one denominator: the mutants any of them witnesses at its own tolerance, on the "
                   "problems all of them can referee.")
@protocol_option("--vs", "vs", help="Another protocol: split the difference into inputs and tolerance")
@click.option("--tolerance", type=TOLERANCE, help="Re-score at this atol = rtol (in (0, 1]) instead of the protocol's.")
@click.option("--atol", type=TOLERANCE, help="Re-score at this atol (with --rtol, or the protocol's rtol).")
@click.option("--rtol", type=click.FloatRange(0.0, 1.0), help="Re-score at this rtol (with --atol, or the protocol's atol).")
@click.option("--reference", type=click.Choice(REFERENCES),
              help="Re-score against this reference instead of the protocol's (e.g. strict-fp32: as kbm's own), "
                   "and --vs's protocol with it.")
@protocol_option("--denominator", "denominator", multiple=True,
                 help="Protocols whose detections define the witnessed mutants (default: every installed one and "
                      "every one the store keeps)")
@accounting_option()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--fail-under", type=PERCENT, help="Exit 7 when detection is below this percentage (0 to 100).")
@click.option("--no-run", is_flag=True, help="Never evaluate missing cells, even with a GPU present.")
@click.option("--sample", type=SHARE,
              help="Score only this share of each problem's mutants (at most the store's; samples nest, so a "
                   "wider store reproduces a narrower one's figures).")
@click.option("--level", help="Audit only this level's problems (e.g. level3: whole networks).")
@click.pass_obj
def audit(obj: Context, adapter: str | None, every: bool, vs: str | None, tolerance: float | None, atol: float | None,
          rtol: float | None, reference: str | None, denominator: tuple[str, ...], accounting: Any, as_json: bool,
          fail_under: float | None, no_run: bool, sample: float | None, level: str | None) -> None:
    """Audit a protocol against the mutant pool, from the store alone (no GPU needed).

    Reports detection of witnessed mutants with a 90% bootstrap band over problems, misses by
    family, the worst problems and rules, and false rejections of the correct kernel. Reads your
    store, or the store shipped with kbm when yours has no cells yet. With a GPU and your own
    store, the cells the protocol lacks are evaluated first (--no-run: never).

    With --atol/--rtol the protocol is re-scored from the stored margins, exactly where they
    decide each cell; the report counts the cells they leave undecided (scored as passing).

    With --all, every protocol is scored on one denominator, as the paper's Fig. 4: what any of
    them witnesses, on the problems all of them can referee.

    Example: kbm audit --adapter kbv --vs kernelbench    or    kbm audit --all
    """
    from kbm_toolkit.analysis.score import to_json
    from kbm_toolkit.evaluation.fill import audit_filling
    from kbm_toolkit.report.audit import print_audit, provenance

    if every == (adapter is not None):
        raise click.UsageError("give --adapter P (one protocol's audit) or --all (every protocol on one denominator)")
    store = obj.read_store()
    _check_level(store, level)
    if every:
        _audit_all(obj, store, denominator, as_json, sample, level)
        return
    assert adapter is not None
    protocol = obj.protocol(adapter, store)
    other = obj.protocol(vs, store) if vs else None
    judging = _rejudging(protocol, tolerance, atol, rtol, reference)
    if other is not None and reference is not None:  # one reference on both sides of the comparison
        other = replace(other, judging=other.judge.with_reference(reference))
    report = audit_filling(store, obj.problems(), protocol, obj.witnesses(denominator, store), tolerance, other,
                           sample, fill=not no_run, on_start=lambda line: click.echo(line, err=True), judging=judging,
                           level=level, accounting=accounting)
    report["provenance"] = provenance(store)
    if store.submission_count():  # what kbm verify found of real submissions, under the same protocol
        from kbm_toolkit.analysis.submissions import submission_verdicts, verdict_counts

        report["submissions"] = dict(verdict_counts(submission_verdicts(store, [protocol])).get(protocol.name, {}))
    if as_json:
        click.echo(to_json(report))
    else:
        print_audit(report, report["provenance"], _fill_command(obj, store, report, adapter))
        if report.get("submissions"):
            click.echo(f"Submissions kbm verify judged: {sum(report['submissions'].values()):,}; {protocol.name} "
                       + ", ".join(f"{w} {n:,}" for w, n in sorted(report["submissions"].items()))
                       + " (kbm submissions lists them)")
    detection = report["detection_pct"]
    if fail_under is not None and (detection or 0.0) < fail_under:
        click.echo(f"--fail-under {fail_under:g}: {protocol.name} detects "
                   + (f"{detection:.1f}%" if detection is not None else "no witnessed mutant")
                   + f" of {report['denominator_words']}, below {fail_under:g}%", err=True)
        sys.exit(ExitCode.BELOW_THRESHOLD)


def _check_level(store: Store, level: str | None) -> None:
    """A `--level` with no mutants in the store is a usage error that names the levels there are."""
    if level is None:
        return
    levels = sorted({key.split("/")[0] for key in store.problems_with_mutants()})
    if level not in levels:
        raise click.UsageError(f"--level {level}: no problem of it has mutants in this store "
                               f"(levels with some: {', '.join(levels) or 'none'})")


def _rejudging(protocol: Any, tolerance: float | None, atol: float | None, rtol: float | None,
               reference: str | None) -> Any:
    """The judging `--atol/--rtol/--reference` ask for (with `--tolerance` as the base), None for the
    protocol's own or a plain `--tolerance`."""
    if tolerance is not None and (atol is not None or rtol is not None):
        raise click.UsageError("--tolerance is atol = rtol: give it, or --atol/--rtol, not both")
    if atol is None and rtol is None and reference is None:
        return None
    given = protocol.judge.with_tolerances(tolerance, tolerance) if tolerance is not None else protocol.judge
    judging = given.with_tolerances(given.atol if atol is None else atol, given.rtol if rtol is None else rtol)
    return judging.with_reference(reference or judging.reference)


def _audit_all(obj: Context, store: Store, denominator: tuple[str, ...], as_json: bool, sample: float | None,
               level: str | None) -> None:
    """`kbm audit --all`: every protocol on one denominator, from the store alone."""
    from kbm_toolkit.analysis.score import to_json, unified_audit
    from kbm_toolkit.report.audit import print_unified, provenance

    report = unified_audit(store, obj.witnesses(denominator, store), sample, level)
    report["provenance"] = provenance(store)
    if as_json:
        click.echo(to_json(report))
    else:
        print_unified(report, report["provenance"])


def _fill_command(obj: Context, store: Store, report: dict, adapter: str) -> str | None:
    """The `kbm run` that fills the cells the audit lacks, as it must be typed to run: the protocol as
    it was given (its path, when it is not installed) and the store; a shipped store, read-only, is
    first copied into yours. Past 8 problems it names none: `kbm run` skips the cells it has."""
    missing = sorted(set(report["missing"]["checks"]) | set(report["missing"]["cells"]))
    if not missing:
        return None
    sample = report.get("sample")
    run = (f"run --inputs {shlex.quote(adapter)}" + (f" --sample {sample['share']:g}" if sample else "")
           + ("".join(f" {shlex.quote(k)}" for k in missing) if len(missing) <= 8 else ""))  # else all: run resumes
    kernelbench = f"--kernelbench {shlex.quote(str(obj.kernelbench))} " if obj.kernelbench else ""
    if store.readonly:  # a shipped store: the cells go into yours, which needs the pool's mutants first
        return f"kbm merge @{shipped_name(obj.store_path) or DEFAULT_SHIPPED} && kbm {kernelbench}{run}"
    mine = f"--store {shlex.quote(str(obj.store_path))} " if obj.store_path else ""
    return f"kbm {mine}{kernelbench}{run}"


@command()
@click.option("--budget", type=click.IntRange(1), default=2, show_default=True, help="Inputs per problem in the suite.")
@click.option("--tolerance", type=TOLERANCE, default=1e-2, show_default=True,
              help="atol = rtol the suite is judged at.")
@protocol_option("--baseline", default="kernelbench", show_default=True, help="Protocol to compare against")
@out_option("Write the suite as an adapter folder here (made if missing).", old="--emit")
@click.option("--format", "fmt", type=click.Choice(["protocol", "kbv"]), default="protocol", show_default=True,
              help="protocol: DIR/protocol.toml. kbv: also KernelBench-Verified hidden test files, "
                   "DIR/hidden_tests/level{L}/{id}_hidden.py, the suite chosen only among the inputs KBV's "
                   "harness can run.")
@click.option("--splits", type=click.IntRange(0), default=20, show_default=True,
              help="Also measure held-out detection on this many other splits (their mean and range).")
@json_option
@click.pass_obj
def suite(obj: Context, budget: int, tolerance: float, baseline: str, out: str | None, fmt: str, splits: int,
          as_json: bool) -> None:
    """Choose per problem the inputs that detect the most witnessed mutants (greedy set cover).

    Prints the budget curve for B = 1..max(5, budget), on the full pool and held out (selected on
    half of each problem's mutants, scored on the other half), against a baseline protocol.
    Only valid inputs run on every mutant are ever chosen. With --format kbv, only those that
    KernelBench-Verified's harness can run too (it builds the model once, from the default
    get_init_inputs()), and the suite is also written as its hidden test files, each rebuilding
    kbm's inputs bit for bit; a kbv-hidden input needs the checkout it came from (--kbv).

    Example: kbm suite --budget 2 --out ./my_suite

    Example: kbm suite --budget 2 --format kbv --out ./my_suite
    """
    from kbm_toolkit.analysis.suite import suite_curve, write_kbv_suite, write_suite
    from kbm_toolkit.problems.hidden_writer import KbvAdmission
    from kbm_toolkit.report.suites import print_curve

    store = obj.read_store()
    folder = output_folder(out) if out else None  # a folder it cannot write is one line before any work
    admission = KbvAdmission(obj.problems().problems(), store.problem_rows()) if fmt == "kbv" else None
    curve = suite_curve(store, budget, tolerance, obj.protocol(baseline, store), splits, admission)
    hidden = write_kbv_suite(curve, store, folder, budget, tolerance, admission,
                             str(obj.store_path) if obj.store_path else None) if folder and admission else None
    written = hidden.protocol if hidden else write_suite(curve, store, folder, budget, tolerance) if folder else None
    left_out = admission.left_out if admission else []
    if as_json:
        kbv = {"left_out": [x._asdict() for x in left_out],
               "hidden_tests": {k: str(p) for k, p in hidden.files.items()} if hidden else None,
               "warnings": hidden.warnings if hidden else []} if admission else {}
        click.echo(json.dumps({"tolerance": tolerance, "baseline": baseline, **curve.summary(),
                               "denominator": curve.denominator_words(tolerance, baseline),
                               "written": str(written) if written else None, **kbv}, indent=1))
        return
    print_curve(curve, tolerance, baseline, splits)
    for x in left_out:
        click.echo(f"{x.problem}: left out" + (f" {x.label!r}" if x.label is not None else "") + f": {x.reason}")
    for line in hidden.warnings if hidden else []:
        click.echo(f"Warning: {line}", err=True)
    if hidden:
        click.echo(f"wrote {len(hidden.files)} hidden test files under {hidden.folder} ({hidden.note.name} says how "
                   f"they were chosen) and {written}: copy {hidden.folder.name}/ into a KernelBench-Verified checkout "
                   f"and run its eval with KB_FP32_TOL={tolerance:g}; audit the same suite with kbm audit --adapter "
                   f"{written.parent}")
    elif written:
        click.echo(f"wrote {written}: audit it with kbm audit --adapter {written.parent}")


@command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Every problem of this level that has a substrate.")
@click.option("--tolerance", type=TOLERANCE, default=1e-2, show_default=True,
              help="atol = rtol at which the validity ceiling is located.")
@click.option("--seeds", type=click.IntRange(1), default=1, show_default=True, help="Draws per targeted input.")
@out_option("Write the targeted inputs here, as an adapter folder (protocol.toml; made if missing).", required=True,
            old="--emit")
@click.pass_obj
def targets(obj: Context, problems: tuple[str, ...], level: str | None, tolerance: float, seeds: int,
            out: str) -> None:
    """Generate structure-targeted inputs per problem from the fault taxonomy, under its ceiling.

    With a GPU, first measures each problem's validity ceiling (the largest scale at which the
    correct substrate still passes, sign-mixed and same-sign), then checks every generated input
    and leaves out those the correct substrate fails: the emitted protocol rejects no correct
    kernel it was measured on. Evaluate the result with `kbm run --inputs DIR`, score it with
    `kbm audit --adapter DIR`.

    Example: kbm targets --level demo --out ./targets
    """
    from kbm_toolkit.evaluation.device import describe_device
    from kbm_toolkit.evaluation.target_checks import make_targets
    from kbm_toolkit.mutation.campaign import gated_sources
    from kbm_toolkit.problems.substrate import substrate_for

    selected = obj.substrate_problems(problems, level)
    env = describe_device()
    store = obj.sometimes_writing_store(bool(env.get("cuda")))  # without a GPU it only reads the stored checks
    if not problems:  # a ceiling is the correct kernel's: only a substrate gated at its source, as kbm mutate takes
        gated = gated_sources(store)
        selected = [p for p in selected if gated.get(p.key) == substrate_for(p).source_hash]
        if not selected:
            raise ProblemError(f"no problem{f' of {level}' if level else ''} has a substrate that passed `kbm gate` "
                               "at its source (in this store or the shipped one): gate them first, or name the "
                               "problems", store.where)
    folder = output_folder(out)  # a folder it cannot write is one line before any GPU work
    run = make_targets(store, selected, folder, env, tolerance, seeds, on_step=lambda line: click.echo(line, err=True))
    for key, limits in run.ceilings.items():
        words = ", ".join(f"{k} x{v:g}" if v else f"{k} not measured (x1 used)" for k, v in limits.items())
        click.echo(f"{key}: {run.generated[key]} targeted inputs; ceiling {words}")
    for key, label, why in run.left_out:
        click.echo(f"{key}: left out {label!r}: the correct substrate fails it ({why})")
    if run.not_checked:
        click.echo(f"{run.not_checked} inputs are not checked yet (no GPU): kbm run checks each before it can kill, "
                   "but the protocol may reject correct kernels on some; run kbm targets on a GPU to leave "
                   "those out.", err=True)
    folder = run.protocol.parent
    click.echo(f"wrote {run.protocol} ({sum(map(len, run.inputs.values()))} inputs, {len(run.left_out)} left out "
               f"as invalid): kbm run --inputs {folder}, then kbm audit --adapter {folder}")


COMMANDS = [audit, suite, targets]
