"""Filling the kill matrix on request: `kbm run`, and the cells an audit finds missing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from kbm_toolkit.analysis.score import audit_store, survivors
from kbm_toolkit.errors import KbmError, NoDevice, OptionError
from kbm_toolkit.evaluation import device, ray_backend
from kbm_toolkit.evaluation.input_sources import resolve
from kbm_toolkit.evaluation.options import GPU_PRELOAD, RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.evaluation.shard import Shard
from kbm_toolkit.evaluation.stats import RunSummary
from kbm_toolkit.evaluation.workers import start_server
from kbm_toolkit.judging import Judging, Margin, extra_margins
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import Protocol, storable_toml
from kbm_toolkit.protocols.registry import all_protocols, load_protocol
from kbm_toolkit.vocabulary import Accounting


GPU_DRIVER = Path("/dev/nvidiactl")
"""Present where an NVIDIA driver is: only a hint to start the workers' fork server early; whether a
GPU is visible is still asked of a worker (`device.describe_device`)."""


@dataclass
class RunRequest:
    """What `kbm run` was asked to evaluate, as the command line says it."""

    source: str
    """Input specs: a protocol, `official`, `gate` or a spec file; several separated by commas."""
    refs: tuple[str, ...] = ()
    level: str | None = None
    sample: float | None = None
    gpus: int | None = None
    """GPUs to run on (None: one here; with `ray`, every GPU of the cluster)."""
    workers: int = 1
    arch: str | None = None
    probe: bool = True
    rerun_crashers: bool = False
    survivors_of: str | None = None
    witnessed: bool = False
    first_kill: bool = False
    checks_only: bool = False
    redo_overwritten: bool = False
    """Measure again the cells an old evaluator may have run on inputs a mutant had written over
    (`Store.overwrite_suspects`), on their own stored inputs; `source` is not used."""
    shard: Shard | None = None
    """Only this shard of the selected problems (`--shard K/N`)."""
    ray: str | None = None
    """Run the workers on the Ray cluster at this address (`--ray auto|ADDRESS`), not here."""
    spares: int | None = None
    """Warm children per worker (`--spares`; None: the run's default)."""
    dry_run: bool = False
    """Count the work left (`RunSummary.planned`) on a scratch copy of the store; no GPU needed."""


def source_protocols(source: str, stored: Callable[[str], str | None] | None = None,
                     known_problems: Iterable[str] | None = None) -> dict[str, Protocol | None]:
    """Each part of `--inputs` (comma-separated), and the protocol it names (None: a spec file or a
    built-in source such as `official`, or one that does not load: `input_sources.resolve` says
    why); `stored`, a store's `protocol_toml`, finds those it keeps, and one given by path may name
    only `known_problems`."""
    parts: dict[str, Protocol | None] = {}
    for part in (p.strip() for p in source.split(",") if p.strip()):
        try:
            parts[part] = load_protocol(part, known_problems if Path(part).exists() else None, stored=stored)
        except KbmError:
            parts[part] = None
    return parts


def keep_protocols(store: Any, parts: dict[str, Protocol | None]) -> None:
    """Keep in `store` each protocol `--inputs` gives by path (`parts`: `source_protocols`), so an
    audit can name it once the folder is gone (not one that runs a module: a store holds no Python
    file)."""
    for part, protocol in parts.items():
        if protocol is not None and Path(part).exists():
            text = storable_toml(Path(part))
            if text is not None:
                store.record_protocol(protocol.name, text, part)


def first_kill_protocols(parts: dict[str, Protocol | None]) -> list[Protocol]:
    """The protocols named by `--inputs` (`parts`: `source_protocols`), whose tolerances say what a
    detection is (`--first-kill`)."""
    for part, protocol in parts.items():
        if protocol is None:
            raise OptionError(f"--first-kill needs protocols as --inputs (their tolerances say what detects a "
                              f"mutant); {part!r} is not one")
    return [p for p in parts.values() if p is not None]


def witness_tolerances() -> tuple[float, ...]:
    """The tolerances every installed protocol's audit judges witnesses at: where a `--first-kill`
    stop must hold for those audits to stay exact."""
    return tuple(sorted({p.tolerance for p in all_protocols()}, reverse=True))


def run_margins(parts: dict[str, Protocol | None]) -> list[Margin]:
    """The margins a run computes beyond the columns: what every installed protocol, and every
    protocol `--inputs` names (`parts`: `source_protocols`), needs to be judged exactly."""
    named = [p.judge for p in parts.values() if p is not None]
    return extra_margins([p.judge for p in all_protocols()] + named)


def fill_matrix(store: Any, problem_set: ProblemSet, request: RunRequest,
                on_progress: Callable[[int, int], None] | None = None,
                on_problem: Callable[[str, str], None] | None = None) -> RunSummary:
    """`kbm run`: evaluate the selected problems' mutants under `request.source` on the GPUs here.

    With no problem named, every problem (of the level) with mutants in the store; NoDevice before
    anything starts when no GPU is visible. With `request.dry_run`, nothing runs and no GPU is
    needed: the work left is counted on a scratch copy of the store (`RunSummary.planned`)."""
    if request.dry_run:
        if request.redo_overwritten or request.ray is not None:
            raise OptionError("--dry-run plans a run of --inputs here; --redo-overwritten and --ray are not planned")
        store = store.scratch_copy()  # planning records inputs and shares: none of it reaches the store
    elif request.ray is not None:
        ray_backend.require()  # one line, before any work, when Ray is not installed
    elif GPU_DRIVER.exists():
        # the GPU workers' fork server imports torch (about 4 s on the H200 host) while this process
        # selects problems and a probe asks the device what it is (about as long): the first worker
        # forks from it at once instead of waiting for those imports after the probe
        start_server(GPU_PRELOAD)
    if request.redo_overwritten:
        return _redo_overwritten(store, problem_set, request, on_progress, on_problem)
    # a protocol the store keeps (`kbm targets --emit`'s, say) is found by name once its folder is gone
    known = {*problem_set.problems(), *store.problem_rows()}
    parts = source_protocols(request.source, store.protocol_toml, known)  # each protocol read once, for every use below
    specs_for = resolve(request.source, known, store.protocol_toml, parts)
    protocols = first_kill_protocols(parts) if request.first_kill else None
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
        only = survivors(store, load_protocol(request.survivors_of, stored=store.protocol_toml),
                         all_protocols() if request.witnessed else None)
    if request.dry_run:  # no device is asked for: the run is recorded in the scratch copy only
        env, where = {"gpu": "none: a dry run"}, {"gpus": request.gpus or 1}
    else:
        env, where = _placement(request)
    if request.checks_only and (request.first_kill or request.survivors_of):
        raise OptionError("--checks-only runs no mutant: --first-kill and --survivors-of choose mutants")
    keep_protocols(store, parts)
    options = RunOptions(**where, workers_per_gpu=request.workers, probe=request.probe,
                         sample=request.sample, rerun_crashers=request.rerun_crashers, only=only,
                         first_kill=protocols, witness_tolerances=witness_tolerances(),
                         on_progress=on_progress, on_problem=on_problem,
                         checks_only=request.checks_only, margins=run_margins(parts), dry_run=request.dry_run)
    return run_evaluation(store, selected, specs_for, request.source, request.arch or env.get("arch", ""), env, options)


def _gpu_here() -> dict[str, Any]:
    """The device `kbm run` evaluates on; NoDevice when none is visible."""
    return device.require_cuda("kbm run evaluates mutants on a GPU and none is visible; "
                               "reports (kbm audit) work from the store without one")


def _placement(request: RunRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """The device the run evaluates on (its description: the run's provenance), and the options
    that say where its workers go (GPUs here, or Ray actors) and which shard of it this is."""
    where: dict[str, Any] = {"gpus": request.gpus or 1, "shard": request.shard, "spares": request.spares}
    if request.ray is None:
        return _gpu_here(), where
    env = ray_backend.describe_device(request.ray)
    if not env.get("cuda"):
        raise NoDevice(f"--ray {request.ray}: no GPU worker of the Ray cluster sees a CUDA device "
                       f"(it has {env['ray_gpus']} GPUs)")
    if request.gpus and request.gpus > env["ray_gpus"]:
        raise OptionError(f"--gpus {request.gpus}: the Ray cluster at {request.ray} has {env['ray_gpus']} GPUs")
    return env, {**where, "gpus": request.gpus or env["ray_gpus"], "ray": request.ray}


def _redo_overwritten(store: Any, problem_set: ProblemSet, request: RunRequest,
                      on_progress: Callable[[int, int], None] | None,
                      on_problem: Callable[[str, str], None] | None) -> RunSummary:
    """`kbm run --redo-overwritten`: each suspect cell measured again on its own stored input, in place."""
    if request.first_kill or request.checks_only or request.survivors_of or request.sample is not None:
        raise OptionError("--redo-overwritten measures stored cells again: --first-kill, --checks-only, "
                          "--survivors-of and --sample choose other work")
    selected = {p.key for p in problem_set.select(request.refs, request.level)}
    suspects: dict[str, dict[str, set[str]]] = {}
    specs: dict[str, list[InputSpec]] = {}
    for input_id, mutants in sorted(store.overwrite_suspects().items()):
        row = store.input_row(input_id)
        if row["problem"] in selected:
            suspects.setdefault(row["problem"], {})[input_id] = mutants
            specs.setdefault(row["problem"], []).append(InputSpec.from_record(json.loads(row["spec"]), row["label"]))
    if not suspects:
        return RunSummary()
    env, where = _placement(request)
    options = RunOptions(**where, workers_per_gpu=request.workers, rerun_crashers=True,
                         on_progress=on_progress, on_problem=on_problem,
                         redo={key: {(m, i) for i, ms in found.items() for m in ms} for key, found in suspects.items()},
                         margins=run_margins({}))  # stored inputs: no protocol of their own
    return run_evaluation(store, [problem_set.get(k) for k in suspects], lambda p: specs[p.key],
                          "redo-overwritten", request.arch or env["arch"], env, options)


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
                  judging: Judging | None = None, level: str | None = None,
                  accounting: Accounting = Accounting.TOLERANCE) -> dict[str, Any]:
    """`kbm audit`: the audit from the store (of `level`'s problems alone, with one); with `fill`, a
    writable store and a GPU here, the cells it lacks are evaluated first and the audit made again."""
    report = audit_store(store, protocol, denominator, tolerance, vs, sample=sample, judging=judging, level=level,
                         accounting=accounting)
    missing = sorted(set(report["missing"]["checks"]) | set(report["missing"]["cells"]))
    if missing and fill and not store.readonly:
        if fill_missing(store, problem_set, protocol, missing, on_start):
            report = audit_store(store, protocol, denominator, tolerance, vs, sample=sample, judging=judging,
                                 level=level, accounting=accounting)
    return report
