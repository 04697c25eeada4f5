"""Commands about problems and their substrates: doctor, problems, check, gate, init-bench."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.cli.params import TOLERANCE, json_option


@command()
@click.pass_obj
def doctor(obj: Context) -> None:
    """Show versions, the CUDA device, where problems come from and where the store is.

    Example: kbm doctor
    """
    from kbm_toolkit.cuda.environment import doctor_rows

    rows = doctor_rows(obj.problems(), obj.resolved_store_path())
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key.ljust(width)}  {value}")


@command("problems")
@click.option("--level", help="Only this level (e.g. level1, demo).")
@json_option
@click.pass_obj
def problems_cmd(obj: Context, level: str | None, as_json: bool) -> None:
    """List problems, their pack, whether each has a substrate, and its gate verdict in the store.

    Then the problems the store gated whose files are not here (the shipped KernelBench pool
    without a checkout).

    Example: kbm problems --level demo
    """
    from kbm_toolkit.analysis.listing import problem_listing

    rows = problem_listing(obj.problems(), obj.read_store("substrates"), level)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        click.echo(f"{r['problem']:<48} {r['pack'] or '-':<12} {r['status']}"
                   + ("" if r["here"] else " (in the store; its file is not here)"))


@command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Check every problem of this level that has a substrate.")
@click.option("--arch", default="sm_90", show_default=True, help="Compile for this target.")
@click.pass_obj
def check(obj: Context, problems: tuple[str, ...], level: str | None, arch: str) -> None:
    """Check substrates without a GPU: compile with NVRTC and dry-run each launcher.

    The dry run executes launch.py on meta tensors (default shapes and every shape in
    substrate.toml): kernel names, argument types, launch limits, the no-torch-compute rule, and
    the output's shape against the reference's.

    Example: kbm check --level demo
    """
    from kbm_toolkit.cuda.dryrun import check_substrate

    selected = obj.substrate_problems(problems, level)
    failures = 0
    for problem in selected:
        result = check_substrate(problem, arch)
        if result.error:
            failures += 1
            click.echo(f"FAIL  {result.problem:<44} {result.error}")
        else:
            click.echo(f"ok    {result.problem:<44} image {result.image_hash[:12]}, "
                       f"{result.shapes} shape(s), {result.launches} launch(es)")
    click.echo(f"{len(selected) - failures} of {len(selected)} substrates pass the static checks.")
    if failures:
        sys.exit(ExitCode.BAD_INPUT)


@command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Gate every problem of this level (default: every problem with a substrate).")
@click.option("--arch", help="Compile for this target (default: the device's; sm_90 without one).")
@click.option("--tolerance", type=TOLERANCE, default=1e-3, show_default=True,
              help="atol = rtol a substrate must meet on every gate input.")
@click.option("--timeout", type=click.FloatRange(0.0, min_open=True), default=900.0, show_default=True,
              help="Seconds one substrate's gate may take before its worker is killed.")
@click.option("--compile-only", is_flag=True, help="Only compile with NVRTC; run nothing on a GPU.")
@click.option("--resume", is_flag=True,
              help="Skip substrates the store already has a verdict for at their current source.")
@json_option
@click.pass_obj
def gate(obj: Context, problems: tuple[str, ...], level: str | None, arch: str | None, tolerance: float,
         timeout: float, compile_only: bool, resume: bool, as_json: bool) -> None:
    """Check substrates against their references on official and harder inputs.

    Only gated substrates may be mutated. Without a GPU, compiles every substrate and shows the
    stored verdicts (your store's, else the shipped one made on an H200).

    Example: kbm gate --level demo
    """
    from kbm_toolkit.evaluation.gate import gate_problems
    from kbm_toolkit.report.gate import print_compile, print_gate_results, print_stored_gates, stored_gates

    selected = obj.substrate_problems(problems, level)
    store = obj.store()
    run = gate_problems(selected, store, arch, tolerance, timeout, compile_only, resume,
                        on_result=None if as_json else lambda r: click.echo(f"  {r.problem}: {r.status}", err=True))
    if resume:
        click.echo(f"--resume: {run.resumed} substrates already gated at this source", err=True)
    if as_json:
        click.echo(json.dumps({"device": run.env, "compiled": [{"problem": c.problem.key, "error": c.error or None,
                                                                 "image": c.image.image_hash if c.image else None}
                                                                for c in run.compiled],
                               "results": [asdict(r) for r in run.results],
                               "stored": [] if run.env.get("cuda") or compile_only
                               else stored_gates(store, [p.key for p in selected])[1]}, indent=1, default=str))
    elif not run.env.get("cuda"):
        print_compile(run.compiled)
        if not compile_only:
            click.echo("No CUDA device visible: nothing was gated on this machine.")
            print_stored_gates(store, [p.key for p in selected])
    else:
        print_gate_results(run.results, run.env)
    if not run.env.get("cuda") and run.failed_compiles:
        sys.exit(ExitCode.BAD_INPUT)
    if not run.all_passed:
        sys.exit(ExitCode.GATE_FAILED)


@command("init-bench")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--name", help="The pack's name, the prefix of its keys (default: the folder's name).")
def init_bench(folder: str, name: str | None) -> None:
    """Write a new benchmark pack: a manifest, one problem, its substrate and one protocol.

    FOLDER must be new or empty. The pack passes `kbm --bench FOLDER check` as written; replace
    the example with your problems (docs/packs.md is the reference).

    Example: kbm init-bench mybench && kbm --bench mybench check
    """
    from kbm_toolkit.problems.pack import init_pack
    from kbm_toolkit.protocols.registry import installed

    pack = init_pack(folder, name, {p.name for _, p in installed()})
    for path in sorted(p for p in pack.root.rglob("*") if p.is_file()):
        click.echo(f"wrote {Path(folder) / path.relative_to(pack.root)}")
    click.echo(f"Pack {pack.name!r}: its problems are {pack.name}/<level>/<id>_<Name>. "
               f"Next: kbm --bench {folder} check")


COMMANDS = [doctor, problems_cmd, check, gate, init_bench]
