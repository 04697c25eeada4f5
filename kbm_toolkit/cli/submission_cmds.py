"""Commands for real submissions: verify (judge them under protocols), submissions (list the verdicts)."""

from __future__ import annotations

import json
import sys

import click

from kbm_toolkit.cli.command import command
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.cli.params import json_option, protocol_option
from kbm_toolkit.vocabulary import SubmissionStatus, Verdict


@command()
@click.argument("paths", nargs=-1, required=True, metavar="SUBMISSION...")
@click.option("--problem", help="The problem they solve (needed unless each file is named as KernelBench's run "
                                "folders name samples, level_{L}_problem_{id}_sample_{s}_kernel.py).")
@protocol_option("--adapter", "-a", "adapters", multiple=True,
                 help="A protocol to judge by; repeatable (default: every installed one)")
@click.option("--workers", type=click.IntRange(1), default=1, show_default=True,
              help="Worker processes on the GPU, each on its own problems.")
@click.option("--timeout", type=click.FloatRange(0, min_open=True),
              help="Seconds a submission may take on one input, building its model included "
                   "[default: 50x the reference's time, at least 30 s].")
@click.option("--load-timeout", type=click.FloatRange(0, min_open=True), default=900.0, show_default=True,
              help="Seconds executing a submission's file may take (an inline CUDA extension compiles then).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="Where inputs, references and submissions run; cpu suits plain-torch submissions of small problems.")
@click.option("--again", is_flag=True, help="Judge anew submissions the store has judged (else their stored "
                                            "results stand, and only what is missing runs).")
@click.option("--inputs", "per_input", is_flag=True, help="One line per input for every submission (the default "
                                                           "for a single one).")
@json_option
@click.pass_obj
def verify(obj: Context, paths: tuple[str, ...], problem: str | None, adapters: tuple[str, ...], workers: int,
           timeout: float | None, load_timeout: float, device: str, again: bool, per_input: bool,
           as_json: bool) -> None:
    """Judge submissions (KernelBench files defining ModelNew) as each protocol judges them.

    Each file or folder of files is a submission: CUDA through load_inline, Triton or plain
    torch. For every protocol, each of its inputs is built, the reference computed as the
    protocol computes it and the output compared as it compares; weights are built as
    KernelBench builds them (seed 42 before ModelNew(*get_init_inputs())). Submissions run in
    isolated workers, input-major: a compile error, crash or hang is a verdict, never a dead run,
    and each input is built once for every submission of its problem. Results go to the store
    (kbm submissions lists them); a stopped run resumes.

    Exit status: 0 when every protocol accepts every submission, 9 when one rejects one, 3 when
    a file is malformed (no ModelNew, a syntax error), 6 when results are missing, 5 without a GPU.

    Example: kbm --kernelbench KernelBench verify runs/my_run/ -a kernelbench -a kbv
    """
    from kbm_toolkit.analysis.submissions import submission_verdicts
    from kbm_toolkit.evaluation.verify import VerifyOptions, verify_submissions
    from kbm_toolkit.problems.submission import find_submissions
    from kbm_toolkit.report.pipeline import progress_bar
    from kbm_toolkit.report.submissions import print_submission, print_table

    found = find_submissions(paths, obj.problems(), problem)
    # a suite `kbm run` was given by path is kept in the store, by name; a store not made yet keeps
    # none, and a protocol named wrong then leaves no empty store behind
    kept = obj.store() if obj.resolved_store_path().is_file() else None
    protocols = obj.protocols(adapters, kept)
    store = kept or obj.store()
    env = _device_env(device)
    before = store.latest_run()
    options = VerifyOptions(workers=workers, run_timeout_s=timeout, load_timeout_s=load_timeout, again=again,
                            device=device, warm=None if device == "cpu" else VerifyOptions.warm)
    try:
        with progress_bar() as progress:
            task = progress.add_task("submissions x inputs", total=None)
            options.on_progress = lambda done, total: progress.update(task, completed=done, total=total)
            options.on_problem = lambda key, verdict: verdict == "done" or progress.console.print(f"{key}: {verdict}")
            summary = verify_submissions(store, found, protocols, env, options)
    except KeyboardInterrupt:
        click.echo(f"Stopped: run {store.latest_run()} stored what it judged; the same command resumes."
                   if store.latest_run() > before else "Stopped before the run began.", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    verdicts = submission_verdicts(store, protocols, [s.id for s in found], obj.problems().problems())
    if as_json:
        click.echo(json.dumps({"run": summary.run, "seconds": round(summary.seconds, 3),
                               "protocols": [p.name for p in protocols],
                               "submissions": [v.record() for v in verdicts]}, indent=1))
    elif per_input or len(verdicts) == 1:
        for v in verdicts:
            print_submission(v, protocols)
    else:
        print_table(verdicts, protocols)
    for v in verdicts:
        if v.submission["status"] == SubmissionStatus.MALFORMED:
            click.echo(f"Error: {v.submission['path']}: malformed: {v.submission['note']}", err=True)
    sys.exit(_exit_code(verdicts, summary.problems))


def _device_env(device: str) -> dict:
    """What the run records of where it ran; NoDevice when CUDA is asked for and none is visible."""
    if device == "cpu":
        return {"device": "cpu"}
    from kbm_toolkit.evaluation.device import require_cuda

    return require_cuda("kbm verify runs submissions on a CUDA device and none is visible "
                        "(--device cpu runs plain-torch submissions on the CPU)")


def _exit_code(verdicts: list, problems: dict[str, str]) -> ExitCode:
    """The documented precedence: a malformed file, results missing, a rejection, else OK."""
    if any(v.submission["status"] == SubmissionStatus.MALFORMED for v in verdicts):
        return ExitCode.BAD_INPUT
    if any(verdict != "done" for verdict in problems.values()) or \
            any(p.verdict == Verdict.INCOMPLETE for v in verdicts for p in v.protocols):
        return ExitCode.RUN_INCOMPLETE
    if any(p.verdict == Verdict.REJECTS for v in verdicts for p in v.protocols):
        return ExitCode.REJECTED
    return ExitCode.OK


@command("submissions")
@click.option("--problem", help="Only the submissions of this problem.")
@protocol_option("--adapter", "-a", "adapters", multiple=True,
                 help="Protocols whose verdicts to show; repeatable (default: every installed one)")
@click.option("--inputs", "per_input", is_flag=True, help="One line per input under each submission.")
@json_option
@click.pass_obj
def submissions_cmd(obj: Context, problem: str | None, adapters: tuple[str, ...], per_input: bool,
                    as_json: bool) -> None:
    """List the submissions kbm verify judged, with each protocol's verdict, from the store alone.

    Example: kbm submissions -a kernelbench -a kbv
    """
    from kbm_toolkit.analysis.submissions import submission_verdicts
    from kbm_toolkit.report.submissions import print_submission, print_table

    store = obj.read_store("submissions")
    protocols = obj.protocols(adapters, store)
    verdicts = submission_verdicts(store, protocols)
    if problem:
        key = obj.problems().get(problem).key
        verdicts = [v for v in verdicts if v.submission["problem"] == key]
    if as_json:
        click.echo(json.dumps([v.record() for v in verdicts], indent=1))
    elif not verdicts:
        click.echo("No submissions in the store: kbm verify judges some.")
    elif per_input:
        for v in verdicts:
            print_submission(v, protocols)
    else:
        print_table(verdicts, protocols)


COMMANDS = [verify, submissions_cmd]
