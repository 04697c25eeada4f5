"""The `kbm` command: a thin skin over the library. Each command parses, calls, and words errors."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from kbm_toolkit import __version__
from kbm_toolkit.errors import KbmError, NoDevice
from kbm_toolkit.cli.exit_codes import ExitCode


class KbmGroup(click.Group):
    """Turns library errors into one line on stderr and a meaningful exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NoDevice as e:
            click.echo(f"Error: {e.line()}", err=True)
            sys.exit(ExitCode.NO_DEVICE)
        except KbmError as e:
            click.echo(f"Error: {e.line()}", err=True)
            sys.exit(ExitCode.BAD_INPUT)
        except KeyboardInterrupt:  # Ctrl-C, or `timeout -s INT`: every command stores as it goes
            click.echo("Stopped: what was stored so far is kept.", err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:  # `kbm mutants | head`: stop quietly, and keep Python's exit flush from failing again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(ExitCode.PIPE_CLOSED)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # Click's own control flow: --help, usage errors
        except Exception:  # a bug in kbm: show the traceback, exit with its own code
            import traceback

            traceback.print_exc()
            click.echo("Error: internal error in kbm (the traceback above); please report it", err=True)
            sys.exit(ExitCode.INTERNAL)


class Context:
    """Options every command shares, resolved lazily."""

    def __init__(self, store: str | None, kernelbench: str | None) -> None:
        self.store_path = Path(store) if store else None
        self.kernelbench = kernelbench

    def problems(self) -> Any:
        from kbm_toolkit.problems.problem import ProblemSet

        return ProblemSet.discover(self.kernelbench)

    def substrate_problems(self, refs: tuple[str, ...], level: str | None) -> list[Any]:
        """The problems named by `refs`, or, when none are named, every one (of `level`) with a substrate."""
        from kbm_toolkit.problems.substrate import has_substrate

        problem_set = self.problems()
        selected = problem_set.select(refs, level)
        if refs:
            return selected
        chosen = [p for p in selected if has_substrate(p)]
        if not chosen:  # e.g. `--level level1` without a KernelBench checkout: say so rather than do nothing
            raise self.nothing_selected(level, "with a substrate in "
                                        + ", ".join(str(r) for _, r in problem_set.roots))
        return chosen

    def nothing_selected(self, level: str | None, lacking: str) -> Exception:
        """The one-line error for a selection that came out empty, e.g. "no problem of level1 with a substrate"."""
        from kbm_toolkit.errors import ProblemError

        return ProblemError(f"no problem{f' of {level}' if level else ''} {lacking}"
                            + ("" if self.kernelbench else "; KernelBench's levels need --kernelbench CHECKOUT"))

    def store(self, writes: bool = True) -> Any:
        """Your store; a command that only reads (`writes=False`) may also be given a shipped one as `@NAME`."""
        from kbm_toolkit.paths import default_store_path
        from kbm_toolkit.store.store import Store

        if self.shipped_name():
            if not writes:
                return self.read_store()
            raise click.UsageError(f"--store {self.store_path} is a store shipped with kbm, read-only; this command "
                                   "writes: give a store of your own (copy one in with `kbm merge`)")
        return Store(self.store_path or default_store_path())

    def stored_problem(self, store: Any, ref: str) -> str:
        """The key of the problem `ref` names: among the problems here, else among those the store holds
        (a shipped KernelBench pool is browsable without the checkout)."""
        from kbm_toolkit.errors import ProblemError
        from kbm_toolkit.problems.problem import problem_from_row, resolve_problem

        try:
            return self.problems().get(ref).key
        except ProblemError:
            stored = {r["key"]: problem_from_row(r["key"], r) for r in store.db["problems"].rows}
            if not stored:
                raise
            return resolve_problem(stored, ref, f"the problems here and those in {store.path}").key

    def shipped_name(self) -> str | None:
        """NAME when the store is given as `@NAME`, one of the stores shipped with kbm."""
        text = str(self.store_path) if self.store_path else ""
        return text[1:] if text.startswith("@") else None

    def read_store(self, holding: str = "cells") -> Any:
        """The store a reading command reads: yours, else (no --store, and yours has no rows in `holding`)
        the shipped one, so that a fresh install browses the KernelBench pool."""
        from kbm_toolkit.paths import embedded_store_path
        from kbm_toolkit.store.store import Store

        name = self.shipped_name()
        if name is not None:
            from kbm_toolkit.paths import SHIPPED_STORES, shipped_store_path

            if name not in SHIPPED_STORES or not shipped_store_path(name).is_file():
                raise click.UsageError(f"no shipped store @{name}; kbm ships "
                                       + ", ".join(f"@{n} ({what})" for n, what in SHIPPED_STORES.items()))
            return Store(shipped_store_path(name), readonly=True)
        path, shipped = self.resolved_store_path(), embedded_store_path()
        if self.store_path is None and shipped.is_file():
            if not path.is_file() or Store(path).db[holding].count == 0:
                return Store(shipped, readonly=True)
        return Store(path)

    def resolved_store_path(self) -> Path:
        from kbm_toolkit.paths import default_store_path

        return self.store_path or default_store_path()


def device_env() -> dict[str, Any]:
    """What a GPU worker sees (`{"cuda": False}` without a device); the CLI process stays CUDA-free."""
    from kbm_toolkit.evaluation.workers import Worker

    with Worker("kbm_toolkit.evaluation.gate:worker_task") as probe:
        reply = probe.run({"op": "describe"}, timeout=120)
    return reply.value if reply.status == "ok" else {"cuda": False}


@click.group(cls=KbmGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kbm")
@click.option("--store", envvar="KBM_STORE", type=click.Path(dir_okay=False),
              help="SQLite store to read and write [env KBM_STORE; default ~/.local/share/kbm/kbm.db]; "
                   "@kernelbench or @demo reads a store shipped with kbm.")
@click.option("--kernelbench", envvar="KBM_KERNELBENCH", type=click.Path(exists=True, file_okay=False),
              help="A KernelBench checkout to load problems from [env KBM_KERNELBENCH].")
@click.pass_context
def cli(ctx: click.Context, store: str | None, kernelbench: str | None) -> None:
    """Measure how good a GPU-kernel benchmark's correctness checker is, by mutation analysis."""
    ctx.obj = Context(store, kernelbench)


@cli.command()
@click.pass_obj
def doctor(obj: Context) -> None:
    """Show versions, the CUDA device, where problems come from and where the store is.

    Example: kbm doctor
    """
    from kbm_toolkit.cuda.environment import describe_task
    from kbm_toolkit.paths import SHIPPED_STORES, cache_dir, shipped_store_path

    info = describe_task()
    rows = [("kbm", info["kbm"]), ("python", f"{info['python']} ({info['python_executable']})"),
            ("torch", f"{info['torch']} (CUDA build {info.get('torch_cuda') or 'none'})"),
            ("cuda-core", info["cuda_core"]), ("cuda-bindings", info["cuda_bindings"]),
            ("NVRTC", info["nvrtc"])]
    if info["cuda"]:
        rows.append(("device", f"{info['gpu']} ({info['arch']}, {info['memory_gib']} GiB, "
                               f"{info['gpus']} visible, driver {info.get('driver') or '?'})"))
    else:
        rows.append(("device", "none visible: kbm compiles (NVRTC) and reports from the store; "
                               "gate and evaluation need a GPU"))
    problem_set = obj.problems()
    for origin, root in problem_set.roots:
        count = sum(1 for p in problem_set.problems().values() if p.origin == origin)
        rows.append((f"problems ({origin})", f"{root} ({count} problems)"))
    if not obj.kernelbench:
        rows.append(("KernelBench", "not set: pass --kernelbench PATH or set KBM_KERNELBENCH"))
    rows.append(("store", str(obj.resolved_store_path())))
    for name in SHIPPED_STORES:
        path = shipped_store_path(name)
        rows.append((f"shipped @{name}", f"{path}" + ("" if path.is_file() else " (absent)")))
    rows.append(("compile cache", str(cache_dir())))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key.ljust(width)}  {value}")


@cli.command("problems")
@click.option("--level", help="Only this level (e.g. level1, demo).")
@click.pass_obj
def problems_cmd(obj: Context, level: str | None) -> None:
    """List problems, whether each has a substrate, and its gate verdict in the store.

    Example: kbm problems --level demo
    """
    from kbm_toolkit.problems.substrate import has_substrate

    store = obj.store(writes=False)
    gates = {r["problem"]: r for r in store.substrates()}
    here = obj.problems().select(level=level)
    for p in here:
        g = gates.get(p.key, {})
        status = g.get("gate_status") or ("not gated" if has_substrate(p) else "no substrate")
        click.echo(f"{p.key:<48} {status}")
    # problems the store gated whose files are not here (e.g. the shipped pool without a KernelBench checkout)
    listed = {p.key for p in here}
    elsewhere = [g for k, g in gates.items() if k not in listed and (level is None or k.split("/")[0] == level)]
    for g in elsewhere:
        click.echo(f"{g['problem']:<48} {g['gate_status'] or 'not gated'} (in the store; its file is not here)")


@cli.command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Gate every problem of this level (default: every problem with a substrate).")
@click.option("--arch", help="Compile for this target (default: the device's; sm_90 without one).")
@click.option("--tolerance", type=float, default=1e-3, show_default=True,
              help="atol = rtol a substrate must meet on every gate input.")
@click.option("--timeout", type=float, default=900.0, show_default=True,
              help="Seconds one substrate's gate may take before its worker is killed.")
@click.option("--compile-only", is_flag=True, help="Only compile with NVRTC; run nothing on a GPU.")
@click.option("--resume", is_flag=True,
              help="Skip substrates the store already has a verdict for at their current source.")
@click.pass_obj
def gate(obj: Context, problems: tuple[str, ...], level: str | None, arch: str | None,
         tolerance: float, timeout: float, compile_only: bool, resume: bool) -> None:
    """Check substrates against their references on official and harder inputs.

    Only gated substrates may be mutated. Without a GPU, compiles every substrate and shows the
    stored verdicts (your store's, else the embedded one made on an H200).

    Example: kbm gate --level demo
    """
    from kbm_toolkit.evaluation import gate as gating
    from kbm_toolkit.cuda.nvrtc import DEFAULT_ARCH
    from kbm_toolkit.report.gate import print_compile, print_gate_results, print_stored_gates
    from kbm_toolkit.problems.substrate import has_substrate, substrate_for
    from kbm_toolkit.evaluation.workers import Worker

    selected = obj.substrate_problems(problems, level)
    store = obj.store()
    env: dict[str, Any] = {"cuda": False}
    worker = Worker("kbm_toolkit.evaluation.gate:worker_task")
    try:
        if not compile_only:
            reply = worker.run({"op": "describe"}, timeout=120)
            env = reply.value if reply.status == "ok" else env
        if resume:
            done = {r["problem"]: r["source_hash"] for r in store.substrates()
                    if r["gate_run"] is not None and r["gate_tolerance"] == tolerance}
            kept = [p for p in selected if not has_substrate(p) or done.get(p.key) != substrate_for(p).source_hash]
            click.echo(f"--resume: {len(selected) - len(kept)} substrates already gated at this source", err=True)
            selected = kept
        compiled = gating.compile_substrates(selected, arch or env.get("arch") or DEFAULT_ARCH, store)
        failed_compiles = [c for c in compiled if c.error]
        if not env.get("cuda"):
            print_compile(compiled)
            if not compile_only:
                click.echo("No CUDA device visible: nothing was gated on this machine.")
                print_stored_gates(store, [p.key for p in selected])
            if failed_compiles:
                sys.exit(ExitCode.BAD_INPUT)
            return
        results = gating.gate_compiled(compiled, store, worker, env, tolerance, timeout,
                                       on_result=lambda r: click.echo(
                                           f"  {r.problem}: {r.status}", err=True))
    finally:
        worker.close()
    print_gate_results(results, env)
    if any(r.status not in ("passed", "unrefereeable") for r in results):
        sys.exit(ExitCode.GATE_FAILED)


@cli.command()
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
    from kbm_toolkit.cuda.dryrun import dry_run
    from kbm_toolkit.cuda.nvrtc import compile_source
    from kbm_toolkit.problems.substrate import substrate_for

    selected = obj.substrate_problems(problems, level)
    failures = 0
    for problem in selected:
        try:
            substrate = substrate_for(problem)
            image = compile_source(substrate.source, arch, where=str(substrate.kernel_path))
            shapes = [None, *substrate.gate_shapes]
            runs = [dry_run(problem, substrate, shape) for shape in shapes]
            launches = sum(len(r.launches) for r in runs)
            click.echo(f"ok    {problem.key:<44} image {image.image_hash[:12]}, "
                       f"{len(shapes)} shape(s), {launches} launch(es)")
        except Exception as e:  # report every substrate, whatever breaks in one
            failures += 1
            why = e.line() if isinstance(e, KbmError) else f"{type(e).__name__}: {e}"
            click.echo(f"FAIL  {problem.key:<44} {why}")
    click.echo(f"{len(selected) - failures} of {len(selected)} substrates pass the static checks.")
    if failures:
        sys.exit(ExitCode.BAD_INPUT)


@cli.command("rules")
@click.option("--family", type=click.Choice(["arithmetic", "indexing", "semantic", "boundary",
                                             "synchronization", "precision"]), help="Only this family.")
@click.option("--sites", "count_sites", is_flag=True,
              help="Count each rule's sites over every shipped substrate (no compiling).")
@click.pass_obj
def rules_cmd(obj: Context, family: str | None, count_sites: bool) -> None:
    """List the mutation rules: name, family, description, and optionally their sites.

    Example: kbm rules --family precision --sites
    """
    from kbm_toolkit.mutation.rules import load_rules
    from kbm_toolkit.problems.substrate import has_substrate, substrate_for

    rules = [r for r in load_rules() if family is None or r.family == family]
    texts: list[tuple[str, str]] = []
    if count_sites:
        for p in obj.problems().select():
            if has_substrate(p):
                sub = substrate_for(p)
                texts.append((sub.source, sub.launcher_path.read_text()))
    for r in rules:
        count = ""
        if count_sites:
            n = sum(len(list(r.sites(k if r.target == "kernel" else l))) for k, l in texts)
            count = f"{n:>6}  "
        click.echo(f"{count}{r.family:<16} {r.name:<40} {r.description}")
    click.echo(f"{len(rules)} rules" + (f" over {len(texts)} substrates" if count_sites else ""))


@cli.command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Mutate every gated substrate of this level.")
@click.option("--arch", help="Compile for this target (default sm_90).")
@click.option("--rule", "rule_names", multiple=True, help="Only these rules (repeatable).")
@click.option("--workers", type=int, help="Compiling processes (default: one per core).")
@click.option("--ungated", is_flag=True, help="Also mutate substrates with no passing gate verdict.")
@click.pass_obj
def mutate(obj: Context, problems: tuple[str, ...], level: str | None, arch: str | None,
           rule_names: tuple[str, ...], workers: int | None, ungated: bool) -> None:
    """Turn gated substrates into mutants, compile them all, and record them in the store.

    Prints the pipeline summary (generated, non-compiling, duplicate, equivalent, distinct) in
    total, by family and by rule.

    Example: kbm mutate --level demo
    """
    from kbm_toolkit.mutation.campaign import mutate_problems
    from kbm_toolkit.cuda.nvrtc import DEFAULT_ARCH
    from kbm_toolkit.report.mutants import print_summary, progress_bar

    store = obj.store()
    selected = obj.substrate_problems(problems, level)
    with progress_bar() as progress:
        summary = mutate_problems(store, selected, arch or DEFAULT_ARCH, rule_names or None, workers,
                                  require_gate=not ungated, progress=progress)
    print_summary(summary)


@cli.command("mutants")
@click.option("--problem", help="Only this problem (key or unambiguous name).")
@click.option("--rule", help="Only this rule.")
@click.option("--family", help="Only this family.")
@click.option("--status", type=click.Choice(["compile_error", "equivalent", "duplicate", "distinct"]),
              help="Only mutants in this status.")
@click.pass_obj
def mutants_cmd(obj: Context, problem: str | None, rule: str | None, family: str | None,
                status: str | None) -> None:
    """List mutants in the store: id, status and name.

    Reads your store, or the store shipped with kbm when yours has no mutants yet.

    Example: kbm mutants --problem demo/2 --family precision
    """
    store = obj.read_store("mutants")
    key = obj.stored_problem(store, problem) if problem else None
    count = 0
    for row in store.mutants(key, rule, family, status):
        count += 1
        click.echo(f"{row['id']}  {row['status']:<13} {row['name']}")
    click.echo(f"{count} mutants")


@cli.command()
@click.argument("mutant_id")
@click.pass_obj
def show(obj: Context, mutant_id: str) -> None:
    """Show one mutant: rule, family, description, site and unified diff.

    Reads your store, or the store shipped with kbm when yours has no mutants yet.

    Example: kbm show 3f2a9c1b
    """
    store = obj.read_store("mutants")
    row = store.mutant(mutant_id)
    rule = store.db["rules"].get(row["rule"])
    click.echo(f"mutant   {row['id']}\n{row['name']}")
    click.echo(f"rule     {row['rule']} ({row['family']}): {rule['description']}")
    status = row["status"] + (f" of {row['duplicate_of']}" if row["duplicate_of"] else "")
    click.echo(f"status   {status}" + (f": {row['message']}" if row["message"] else ""))
    click.echo("")
    click.echo(row["diff"].rstrip())


@cli.command("run")
@click.argument("problems", nargs=-1)
@click.option("--inputs", "source", default="official", show_default=True,
              help="Input specs: official, gate, an adapter, or a .toml/.jsonl file of spec records; "
                   "several separated by commas.")
@click.option("--level", help="Every problem of this level that has mutants.")
@click.option("--sample", type=click.FloatRange(0.0, 1.0, min_open=True),
              help="Evaluate only this share of each problem's mutants (a fixed draw by id; a larger share "
                   "extends a smaller one). Scores are then over the sample.")
@click.option("--gpus", type=int, default=1, show_default=True, help="GPUs to use, from device 0.")
@click.option("--workers", type=int, default=1, show_default=True,
              help="Workers per GPU, each on its own problems: one restarts after a crash while the others run.")
@click.option("--arch", help="Compile for this target (default: the device's).")
@click.option("--no-probe", is_flag=True, help="Skip the tiny-input crash probe.")
@click.option("--rerun-crashers", is_flag=True,
              help="Run a mutant on every input even after it crashed or hung on one (each crash costs a restart).")
@click.option("--survivors-of", "survivors_of",
              help="Only the mutants this protocol does not detect in the store (e.g. new inputs on what the "
                   "official check misses).")
@click.option("--witnessed", is_flag=True,
              help="With --survivors-of: only the survivors some built-in protocol detects (the knowledge "
                   "ladder's fixed denominator), not those no stored input has witnessed yet.")
@click.option("--first-kill", is_flag=True,
              help="Stop giving a mutant a protocol's inputs once that protocol detects it: every audit of "
                   "the --inputs protocols is unchanged at about a third of the cells, but these mutants get "
                   "no full rows, which suites need (they use the share evaluated without this).")
@click.pass_obj
def run_cmd(obj: Context, problems: tuple[str, ...], source: str, level: str | None, sample: float | None,
            gpus: int, workers: int, arch: str | None, no_probe: bool, rerun_crashers: bool,
            survivors_of: str | None, witnessed: bool, first_kill: bool) -> None:
    """Evaluate every distinct mutant under a set of input specs: fill the kill matrix.

    Resumable: cells already in the store are skipped, so the same command continues a run that
    was interrupted (Ctrl-C, kill, crash).

    Example: kbm run --inputs kernelbench,kbv,fuzz --level level1 --sample 0.1
    """
    from kbm_toolkit.evaluation.run import largest_parts, run_evaluation
    from kbm_toolkit.report.mutants import progress_bar
    from kbm_toolkit.evaluation.input_sources import resolve

    specs_for = resolve(source)
    protocols = _protocols_of(source) if first_kill else None
    store = obj.store()
    with_mutants = {r["problem"] for r in store.db.query("select distinct problem from mutants")}
    selected = obj.problems().select(problems, level)
    if not problems:
        selected = [p for p in selected if p.key in with_mutants]
        if not selected:
            raise obj.nothing_selected(level, f"here has mutants in {store.path}: `kbm mutate` makes them")
    only = None
    if witnessed and not survivors_of:
        raise click.UsageError("--witnessed narrows --survivors-of; name the protocol whose survivors to run")
    if survivors_of:
        from kbm_toolkit.protocols.registry import all_protocols, load_protocol
        from kbm_toolkit.analysis.score import survivors

        only = survivors(store, load_protocol(survivors_of), all_protocols() if witnessed else None)
    env = device_env()
    if not env.get("cuda"):
        raise NoDevice("kbm run evaluates mutants on a GPU and none is visible; "
                       "reports (kbm audit) work from the store without one")
    before = store.db.execute("select coalesce(max(id), 0) from runs").fetchone()[0]
    try:
        with progress_bar() as progress:
            task = progress.add_task("cells", total=None)
            summary = run_evaluation(
                store, selected, specs_for, source, arch or env["arch"], env, gpus, not no_probe,
                on_progress=lambda done, total: progress.update(task, completed=done, total=total),
                on_problem=lambda key, verdict: progress.console.print(f"{key}: {verdict}"),
                workers_per_gpu=workers, sample=sample, rerun_crashers=rerun_crashers, only=only,
                first_kill=protocols)
    except KeyboardInterrupt:
        run = store.db.execute("select id, (select count(*) from cells where run = runs.id) from runs "
                               "where id > ? order by id desc limit 1", [before]).fetchone()
        click.echo(f"Stopped: run {run[0]} stored {run[1]:,} cells; the same command resumes from them."
                   if run else "Stopped before the run began.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    click.echo(f"{summary.cells} cells written, {len(summary.quarantined)} mutants quarantined on the probe, "
               f"{summary.restarts} worker restarts ({summary.waited_s:.1f} s waiting for a worker to start).")
    split = summary.seconds
    if split.get("wall"):
        click.echo("workers' time: " + ", ".join(f"{k} {v / split['wall']:.0%}" for v, k in largest_parts(split)[:4])
                   + " (bench/eval_throughput.py --analyse-run last: the whole split)")
    if any(v != "done" for v in summary.problems.values()):
        sys.exit(ExitCode.RUN_INCOMPLETE)


def _protocols_of(source: str) -> list[Any]:
    """The protocols named by `--inputs` for `--first-kill`, whose tolerances say what a detection is."""
    from kbm_toolkit.protocols.registry import load_protocol

    protocols = []
    for part in (p.strip() for p in source.split(",") if p.strip()):
        try:
            protocols.append(load_protocol(part))
        except KbmError:
            raise click.UsageError(f"--first-kill needs protocols as --inputs (their tolerances say what "
                                   f"detects a mutant); {part!r} is not one") from None
    return protocols


def _fill_missing(obj: Context, store: Any, protocol: Any, keys: list[str]) -> bool:
    """Evaluate the cells a protocol needs when a GPU is visible; False when there is none."""
    from kbm_toolkit.evaluation.run import run_evaluation

    env = device_env()
    if not env.get("cuda"):
        return False
    click.echo(f"Evaluating the cells {protocol.name} needs on {len(keys)} problems ({env['gpu']})...", err=True)
    share_of = store.fill_shares(keys)
    for share in sorted(set(share_of.values()), key=lambda f: f or 1.0):
        problems = [obj.problems().get(k) for k in keys if share_of[k] == share]
        run_evaluation(store, problems, protocol.specs, protocol.name, env["arch"], env, sample=share)
    return True


@cli.command()
@click.option("--budget", type=int, default=2, show_default=True, help="Inputs per problem in the suite.")
@click.option("--tolerance", type=float, default=1e-2, show_default=True, help="atol = rtol the suite is judged at.")
@click.option("--baseline", default="kernelbench", show_default=True, help="Protocol to compare against.")
@click.option("--emit", type=click.Path(file_okay=False), help="Write the suite as an adapter folder here.")
@click.option("--splits", type=click.IntRange(0), default=20, show_default=True,
              help="Also measure held-out detection on this many other splits (their mean and range).")
@click.pass_obj
def suite(obj: Context, budget: int, tolerance: float, baseline: str, emit: str | None, splits: int) -> None:
    """Choose per problem the inputs that detect the most witnessed mutants (greedy set cover).

    Prints the budget curve for B = 1..max(5, budget), on the full pool and held out (selected on
    half of each problem's mutants, scored on the other half), against a baseline protocol.
    Only valid inputs run on every mutant are ever chosen.

    Example: kbm suite --budget 2 --emit ./my_suite
    """
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.analysis.score import load_matrices, run_protocol
    from kbm_toolkit.analysis.suite import budget_curve, emit_protocol

    store = obj.read_store()
    matrices = load_matrices(store, full_rows=True)  # set cover needs full rows (not --first-kill's)
    base = run_protocol(load_protocol(baseline), matrices, tolerance)
    budgets = list(range(1, max(5, budget) + 1))
    curve = budget_curve(matrices, tolerance, budgets, base.detected, splits)
    click.echo(f"Witnessed at {tolerance:g}: {curve.witnessed} mutants over {len(matrices)} problems.")
    click.echo("budget       " + "  ".join(f"B = {b:<4}" for b in budgets) + f"  {baseline}")
    click.echo("full pool    " + "  ".join(f"{x:7.1f}%" for x in curve.full) + f"  {curve.baseline_full:.1f}%")
    click.echo("held-out     " + "  ".join(f"{x:7.1f}%" for x in curve.held_out) + f"  {curve.baseline_held_out:.1f}%")
    if splits:
        click.echo(f"{f'  mean of {splits}':<13}" + "  ".join(f"{sum(x) / len(x):7.1f}%" for x in curve.held_out_splits))
        click.echo("  range      " + "  ".join(f"{f'{min(x):.0f}–{max(x):.0f}%':>8}" for x in curve.held_out_splits))
    if emit:
        folder = Path(emit)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "protocol.toml").write_text(emit_protocol(curve.suites[budget], store, f"suite-{budget}", tolerance))
        click.echo(f"wrote {folder / 'protocol.toml'}: audit it with kbm audit --adapter {folder}")


@cli.command()
@click.argument("problems", nargs=-1)
@click.option("--level", help="Every problem of this level that has a substrate.")
@click.option("--tolerance", type=float, default=1e-2, show_default=True,
              help="atol = rtol at which the validity ceiling is located.")
@click.option("--seeds", type=int, default=1, show_default=True, help="Draws per targeted input.")
@click.option("--emit", type=click.Path(file_okay=False), required=True,
              help="Write the targeted inputs here, as an adapter folder (protocol.toml).")
@click.pass_obj
def targets(obj: Context, problems: tuple[str, ...], level: str | None, tolerance: float, seeds: int,
            emit: str) -> None:
    """Generate structure-targeted inputs per problem from the fault taxonomy, under its ceiling.

    With a GPU, first measures each problem's validity ceiling (the largest scale at which the
    correct substrate still passes, sign-mixed and same-sign), then checks every generated input
    and leaves out those the correct substrate fails: the emitted protocol rejects no correct
    kernel it was measured on. Evaluate the result with `kbm run --inputs DIR`, score it with
    `kbm audit --adapter DIR`.

    Example: kbm targets --level demo --emit ./targets
    """
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.mutation.mutants import substrate_hash
    from kbm_toolkit.analysis.score import valid_at
    from kbm_toolkit.problems.substrate import substrate_for
    from kbm_toolkit.analysis.targets import ceiling, ceiling_probes, emit_targets, targeted_specs

    env = device_env()
    store = obj.store() if env.get("cuda") else obj.read_store()  # without a GPU it only reads the stored checks
    selected = obj.substrate_problems(problems, level)
    hashes = {p.key: substrate_hash(substrate_for(p)) for p in selected}

    def checks_of(problem: Any) -> dict[str, dict[str, Any]]:
        return store.checked_inputs(problem.key, hashes[problem.key])

    def check_on_gpu(what: str, todo: list[Any], specs_for: Any, source: str) -> None:
        if todo and env.get("cuda"):  # every problem in one run: warm workers, every visible GPU
            click.echo(f"{what} of {len(todo)} problems on {env['gpu']}...", err=True)
            run_evaluation(store, todo, specs_for, source, env["arch"], env, gpus=env.get("gpus") or 1,
                           checks_only=True)

    def unchecked(specs_for: Any) -> list[Any]:
        return [p for p in selected if any(s.id not in checks_of(p) for s in specs_for(p))]

    check_on_gpu("Measuring the validity ceiling", unchecked(ceiling_probes), ceiling_probes, "ceiling")
    generated = {}
    for problem in selected:
        limits = ceiling(checks_of(problem), ceiling_probes(problem), tolerance)
        generated[problem.key] = targeted_specs(problem, limits, substrate_for(problem).gate_shapes, seeds)
        words = ", ".join(f"{k} x{v:g}" if v else f"{k} not measured (x1 used)" for k, v in limits.items())
        click.echo(f"{problem.key}: {len(generated[problem.key])} targeted inputs; ceiling {words}")
    check_on_gpu("Checking the targeted inputs", unchecked(lambda p: generated[p.key]), lambda p: generated[p.key],
                 "targets")
    dropped, not_checked = 0, 0
    for problem in selected:  # the validity gate: an input the correct substrate fails is not emitted
        checks = checks_of(problem)
        kept = [s for s in generated[problem.key] if s.id not in checks or valid_at(checks[s.id], tolerance)]
        not_checked += sum(s.id not in checks for s in kept)
        kept_ids = {s.id for s in kept}
        for spec in generated[problem.key]:
            if spec.id not in kept_ids:
                check = checks[spec.id]
                why = check["note"] or (f"margin {check['margin']:.3g} > {tolerance:g}" if check["margin"] is not None
                                        else "invalid")
                click.echo(f"{problem.key}: left out {spec.label!r}: the correct substrate fails it ({why})")
                dropped += 1
        generated[problem.key] = kept
    folder = Path(emit)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "protocol.toml").write_text(emit_targets(generated, folder.name or "targets", tolerance))
    if not_checked:
        click.echo(f"{not_checked} inputs are not checked yet (no GPU): kbm run checks each before it can kill, "
                   "but the protocol may reject correct kernels on some; run kbm targets on a GPU to leave "
                   "those out.", err=True)
    click.echo(f"wrote {folder / 'protocol.toml'} ({sum(map(len, generated.values()))} inputs, {dropped} left out "
               f"as invalid): kbm run --inputs {folder}, then kbm audit --adapter {folder}")


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["stryker"]), default="stryker", show_default=True,
              help="stryker: the mutation-testing-elements JSON report (schema version 2).")
@click.option("--adapter", "-a", "adapter", default="kernelbench", show_default=True,
              help="The protocol whose verdicts the report shows.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here instead of standard output.")
@click.pass_obj
def export(obj: Context, fmt: str, adapter: str, out: str | None) -> None:
    """Export the store in a standard format, e.g. for the mutation-testing HTML viewer.

    Killed: the protocol detects the mutant; Survived: witnessed but missed; CompileError;
    RuntimeError: quarantined on the probe; Ignored: equivalent, duplicate or unwitnessed.

    Example: kbm export --format stryker --adapter kbv --out report.json
    """
    import json

    from kbm_toolkit.report.stryker import stryker_report
    from kbm_toolkit.protocols.registry import all_protocols, load_protocol

    store = obj.read_store()
    report = stryker_report(store, load_protocol(adapter), all_protocols())
    text = json.dumps(report, indent=1)
    exported = sum(len(f["mutants"]) for f in report["files"].values())
    if out:
        Path(out).write_text(text)
        click.echo(f"wrote {out}: {exported} mutants in {len(report['files'])} files")
    else:
        click.echo(text)
    stale = store.db["mutants"].count - exported
    if stale:  # their diffs apply to a substrate as it was, not to the one shipped now
        click.echo(f"left out {stale} mutants made from a substrate that has changed since, or that is not "
                   "shipped with kbm (`kbm mutate` remakes them)", err=True)


@cli.command()
@click.option("--out", type=click.Path(file_okay=False), help="Folder for the figures and index.html.")
@click.option("--tables", is_flag=True,
              help="Print Table 1 (the pipeline) and Table 2 (families) as Markdown instead; the first protocol is the official one.")
@click.option("--adapter", "-a", "adapters", multiple=True,
              help="Protocols to compare (default: every installed one; with --tables, kernelbench, kbv and fuzz).")
@click.option("--sample", type=click.FloatRange(0.0, 1.0, min_open=True),
              help="Score only this share of each problem's mutants (at most the store's; samples nest, so a "
                   "wider store reproduces a narrower one's figures).")
@click.pass_obj
def report(obj: Context, out: str | None, tables: bool, adapters: tuple[str, ...], sample: float | None) -> None:
    """Draw the figures (PNG and SVG) and an HTML page with the pipeline and family tables.

    Figures: missed % by family per protocol; the per-problem sorted miss curve; the budget
    curve; the blind band (output magnitude against each tolerance).

    Example: kbm report --out report/    or    kbm report --tables -a kernelbench -a kbv
    """
    from kbm_toolkit.protocols.registry import all_protocols, load_protocol
    from kbm_toolkit.report.audit import provenance

    store = obj.read_store()
    if tables:
        from kbm_toolkit.report.tables import markdown, table1, table2
        from kbm_toolkit.analysis.score import audit_store, load_matrices

        chosen, denominator = [load_protocol(a) for a in adapters or ("kernelbench", "kbv", "fuzz")], all_protocols()
        # one load for every audit: cells passing under every tolerance used cannot matter
        matrices = load_matrices(store, min(p.tolerance for p in chosen + denominator), sample=sample)
        audits = {p.name: audit_store(store, p, denominator, matrices=matrices, sample=sample) for p in chosen}
        click.echo(f"{provenance(store)}\n\nTable 1: the mutation pipeline\n\n"
                   f"{markdown(table1(store, audits[chosen[0].name]))}\n\n"
                   f"Table 2: witnessed mutants by family, and the share each protocol misses\n\n"
                   f"{markdown(table2(audits))}")
        return
    if out is None:
        raise click.UsageError("give --out DIR for the figures, or --tables for the Markdown tables")
    from kbm_toolkit.report.figures import write_report

    protocols = [load_protocol(a) for a in adapters] if adapters else all_protocols()
    page = write_report(store, protocols, Path(out), sample=sample)
    click.echo(f"{provenance(store)}\nwrote {page}")


@cli.command()
@click.argument("store_path", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--adapter", "-a", "adapters", multiple=True, help="Protocols to show (default: every installed one).")
@click.pass_obj
def tui(obj: Context, store_path: str | None, adapters: tuple[str, ...]) -> None:
    """Browse a store in the terminal: overview, miss patterns, problems, mutant details.

    Keys: o overview, p patterns, r problems, enter to open, escape to go back, / to filter,
    t to change protocol, q to quit.

    Example: kbm tui ~/.local/share/kbm/kbm.db
    """
    from kbm_toolkit.protocols.registry import all_protocols, load_protocol
    from kbm_toolkit.tui.app import KbmApp

    path = Path(store_path) if store_path else obj.read_store().path
    protocols = [load_protocol(a) for a in adapters] if adapters else all_protocols()
    KbmApp(path, protocols).run()


@cli.command()
@click.argument("problems", nargs=-1)
@click.option("--adapter", "-a", "adapter", default="kernelbench", show_default=True,
              help="The protocol whose inputs and tolerance are checked.")
@click.option("--level", help="Every problem of this level that has a substrate.")
@click.pass_obj
def refcheck(obj: Context, problems: tuple[str, ...], adapter: str, level: str | None) -> None:
    """Check that a protocol can referee each problem: the reference against its own fp64 evaluation.

    Evaluates each problem's reference in fp32 and in fp64 on the protocol's inputs (on the GPU
    when there is one, else on the CPU) and flags problems whose fp32 reference misses fp64 by more
    than the tolerance, and problems whose output is within the tolerance of zero on every input
    (an all-zeros kernel passes). `kbm audit` leaves flagged problems out of its scores and lists
    them. Checks already stored are kept, so the command resumes.

    Example: kbm refcheck -a kbv --level demo
    """
    from types import SimpleNamespace

    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.evaluation.reference_check import check_references, flags

    protocol = load_protocol(adapter)
    store = obj.store()
    selected = obj.substrate_problems(problems, level)
    env = device_env()
    device = "cuda" if env.get("cuda") else "cpu"
    for key, why in check_references(store, selected, protocol, env).items():
        click.echo(f"{key}: the reference check stopped: {why}", err=True)
    checks = store.reference_checks()
    flagged = flags(protocol, [SimpleNamespace(problem=p, checks={}) for p in selected], checks)
    click.echo(f"{protocol.name} at {protocol.tolerance:g}, references in fp32 against fp64 on the {device.upper()}:")
    for problem in selected:
        rows = [checks[s.id] for s in protocol.specs(problem) if s.id in checks]
        worst = max((r["fp64_margin"] or 0.0 for r in rows), default=0.0)
        largest = max((r["ref_abs_max"] or 0.0 for r in rows), default=0.0)
        click.echo(f"{'flag' if problem.key in flagged else 'ok':<5} {problem.key:<48} {len(rows)} inputs, "
                   f"fp64 margin {worst:.1e}, max |ref| {largest:.1e}"
                   + (f": {flagged[problem.key]}" if problem.key in flagged else ""))
    click.echo(f"{len(flagged)} of {len(selected)} problems cannot be refereed by {protocol.name}; "
               "kbm audit leaves them out.")


@cli.command()
@click.argument("others", nargs=-1, required=True)
@click.pass_obj
def merge(obj: Context, others: tuple[str, ...]) -> None:
    """Copy into the store every row it lacks from other stores (e.g. shards filled on other GPUs).

    Runs keep their provenance and are re-numbered; rows the store already has are kept.

    Example: kbm --store pool.db merge shard-a.db shard-b.db    or    kbm --store mine.db merge @kernelbench
    """
    from kbm_toolkit.store.store import Store

    store = obj.store()
    for path in others:
        other = Context(path, None).read_store() if path.startswith("@") else Store(path, readonly=True)
        added = store.merge(other)
        words = ", ".join(f"{n} {table}" for table, n in added.items() if n) or "nothing new"
        click.echo(f"{path}: {words}")


@cli.command("adapters")
@click.pass_obj
def adapters_cmd(obj: Context) -> None:
    """List the installed protocols: adapter, name, tolerance, description.

    Example: kbm adapters
    """
    from kbm_toolkit.protocols.registry import adapter_names, adapter_protocols

    for name in adapter_names():
        for p in adapter_protocols(name):
            click.echo(f"{name:<14} {p.name:<18} {p.tolerance:<8g} {p.description}")


@cli.command()
@click.option("--adapter", "-a", "adapter", required=True,
              help="The protocol to audit: an installed adapter's name (kbm adapters) or a path.")
@click.option("--vs", "vs", help="Another protocol: split the difference into inputs and tolerance.")
@click.option("--tolerance", type=float, help="Re-score at this atol = rtol instead of the protocol's.")
@click.option("--denominator", "denominator", multiple=True,
              help="Protocols whose detections define the witnessed mutants (default: every installed one).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--fail-under", type=float, help="Exit 7 when detection is below this percentage.")
@click.option("--no-run", is_flag=True, help="Never evaluate missing cells, even with a GPU present.")
@click.option("--sample", type=click.FloatRange(0.0, 1.0, min_open=True),
              help="Score only this share of each problem's mutants (at most the store's; samples nest, so a "
                   "wider store reproduces a narrower one's figures).")
@click.pass_obj
def audit(obj: Context, adapter: str, vs: str | None, tolerance: float | None, denominator: tuple[str, ...],
          as_json: bool, fail_under: float | None, no_run: bool, sample: float | None) -> None:
    """Audit a protocol against the mutant pool, from the store alone (no GPU needed).

    Reports detection of witnessed mutants with a 90% bootstrap band over problems, misses by
    family, the worst problems and rules, and false rejections of the correct kernel. Reads your
    store, or the store shipped with kbm when yours has no cells yet.

    Example: kbm audit --adapter kbv --vs kernelbench
    """
    from kbm_toolkit.protocols.registry import all_protocols, load_protocol
    from kbm_toolkit.report.audit import print_audit, provenance
    from kbm_toolkit.analysis.score import audit_store, to_json

    protocol = load_protocol(adapter)
    other = load_protocol(vs) if vs else None
    deno = [load_protocol(d) for d in denominator] if denominator else all_protocols()
    store = obj.read_store()
    report = audit_store(store, protocol, deno, tolerance, other, sample=sample)
    missing = sorted(set(report["missing"]["checks"]) | set(report["missing"]["cells"]))
    if missing and not no_run and not store.readonly:
        if _fill_missing(obj, store, protocol, missing):
            report = audit_store(store, protocol, deno, tolerance, other, sample=sample)
    report["provenance"] = provenance(store)
    if as_json:
        click.echo(to_json(report))
    else:
        print_audit(report, report["provenance"])
    if fail_under is not None and (report["detection_pct"] or 0.0) < fail_under:
        sys.exit(ExitCode.BELOW_THRESHOLD)


def main() -> None:
    """Console-script entry point."""
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID` prints every thread's stack, e.g. of a run that will not stop
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    cli(prog_name="kbm")
