"""Filling the kill matrix on request: `kbm run`, and the cells an audit finds missing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kbm_toolkit.analysis.score import audit_store, survivors
from kbm_toolkit.errors import KbmError, NoDevice, OptionError
from kbm_toolkit.evaluation import device
from kbm_toolkit.evaluation.input_sources import resolve
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.evaluation.stats import RunSummary
from kbm_toolkit.judging import Judging, Margin, extra_margins
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.protocols.registry import all_protocols, load_protocol


@dataclass
class RunRequest:
    """What `kbm run` was asked to evaluate, as the command line says it."""

    source: str
    """Input specs: a protocol, `official`, `gate` or a spec file; several separated by commas."""
    refs: tuple[str, ...] = ()
    level: str | None = None
    sample: float | None = None
    gpus: int = 1
    workers: int = 1
    arch: str | None = None
    probe: bool = True
    rerun_crashers: bool = False
    survivors_of: str | None = None
    witnessed: bool = False
    first_kill: bool = False
    checks_only: bool = False


def source_protocols(source: str) -> dict[str, Protocol | None]:
    """Each part of `--inputs` (comma-separated), and the protocol it names (None: a spec file or a
    built-in source such as `official`)."""
    parts: dict[str, Protocol | None] = {}
    for part in (p.strip() for p in source.split(",") if p.strip()):
        try:
            parts[part] = load_protocol(part)
        except KbmError:
            parts[part] = None
    return parts


def first_kill_protocols(source: str) -> list[Protocol]:
    """The protocols named by `--inputs`, whose tolerances say what a detection is (`--first-kill`)."""
    parts = source_protocols(source)
    for part, protocol in parts.items():
        if protocol is None:
            raise OptionError(f"--first-kill needs protocols as --inputs (their tolerances say what detects a "
                              f"mutant); {part!r} is not one")
    return [p for p in parts.values() if p is not None]


def run_margins(source: str) -> list[Margin]:
    """The margins a run computes beyond the columns: what every installed protocol, and every
    protocol `source` names, needs to be judged exactly."""
    named = [p.judge for p in source_protocols(source).values() if p is not None]
    return extra_margins([p.judge for p in all_protocols()] + named)


def fill_matrix(store: Any, problem_set: ProblemSet, request: RunRequest,
                on_progress: Callable[[int, int], None] | None = None,
                on_problem: Callable[[str, str], None] | None = None) -> RunSummary:
    """`kbm run`: evaluate the selected problems' mutants under `request.source` on the GPUs here.

    With no problem named, every problem (of the level) with mutants in the store; NoDevice before
    anything starts when no GPU is visible."""
    specs_for = resolve(request.source, {*problem_set.problems(), *store.problem_rows()})
    protocols = first_kill_protocols(request.source) if request.first_kill else None
    if request.witnessed and not request.survivors_of:
        raise OptionError("--witnessed narrows --survivors-of; name the protocol whose survivors to run")
    selected = problem_set.select(request.refs, request.level)
    if not request.refs:
        with_mutants = set(store.problems_with_mutants())
        selected = [p for p in selected if p.key in with_mutants]
        if not selected:
            raise problem_set.nothing_selected(request.level, f"here has mutants in {store.where}: "
                                                              "`kbm mutate` makes them")
    only = None
    if request.survivors_of:
        only = survivors(store, load_protocol(request.survivors_of),
                         all_protocols() if request.witnessed else None)
    env = device.describe_device()
    if not env.get("cuda"):
        raise NoDevice("kbm run evaluates mutants on a GPU and none is visible; "
                       "reports (kbm audit) work from the store without one")
    if request.checks_only and (request.first_kill or request.survivors_of):
        raise OptionError("--checks-only runs no mutant: --first-kill and --survivors-of choose mutants")
    options = RunOptions(gpus=request.gpus, workers_per_gpu=request.workers, probe=request.probe,
                         sample=request.sample, rerun_crashers=request.rerun_crashers, only=only,
                         first_kill=protocols, on_progress=on_progress, on_problem=on_problem,
                         checks_only=request.checks_only, margins=run_margins(request.source))
    return run_evaluation(store, selected, specs_for, request.source, request.arch or env["arch"], env, options)


def fill_missing(store: Any, problem_set: ProblemSet, protocol: Protocol, keys: list[str],
                 on_start: Callable[[str], None] | None = None) -> bool:
    """Evaluate the cells `protocol` lacks on the problems `keys`, each at its own evaluated share,
    when a GPU is visible; False when there is none."""
    env = device.describe_device()
    if not env.get("cuda"):
        return False
    if on_start:
        on_start(f"Evaluating the cells {protocol.name} needs on {len(keys)} problems ({env['gpu']})...")
    share_of = store.fill_shares(keys)
    for share in sorted(set(share_of.values()), key=lambda f: f or 1.0):
        problems = [problem_set.get(k) for k in keys if share_of[k] == share]
        run_evaluation(store, problems, protocol.specs, protocol.name, env["arch"], env, RunOptions(sample=share))
    return True


def audit_filling(store: Any, problem_set: ProblemSet, protocol: Protocol, denominator: list[Protocol],
                  tolerance: float | None = None, vs: Protocol | None = None, sample: float | None = None,
                  fill: bool = True, on_start: Callable[[str], None] | None = None,
                  judging: Judging | None = None) -> dict[str, Any]:
    """`kbm audit`: the audit from the store; with `fill`, a writable store and a GPU here, the cells
    it lacks are evaluated first and the audit made again."""
    report = audit_store(store, protocol, denominator, tolerance, vs, sample=sample, judging=judging)
    missing = sorted(set(report["missing"]["checks"]) | set(report["missing"]["cells"]))
    if missing and fill and not store.readonly:
        if fill_missing(store, problem_set, protocol, missing, on_start):
            report = audit_store(store, protocol, denominator, tolerance, vs, sample=sample, judging=judging)
    return report
