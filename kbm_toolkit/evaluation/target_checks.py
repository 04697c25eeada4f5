"""`kbm targets`: measure each problem's validity ceiling, generate its targeted inputs under it,
check them on the correct substrate, and write the ones it passes as a protocol.

Generating is `analysis.targets`' part (no GPU); the checks run every problem in one run over
every visible GPU. Without one, the checks already stored decide, and inputs not checked yet
are emitted with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kbm_toolkit.analysis.matrix import valid_at
from kbm_toolkit.analysis.targets import ceiling, ceiling_probes, emit_targets, targeted_specs
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.plan import check_again
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.outputs import output_file
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import substrate_for


@dataclass
class TargetsRun:
    """What `make_targets` wrote, and why each input it left out was left out."""

    protocol: Path
    inputs: dict[str, list[InputSpec]]
    """Problem -> the inputs written: those the correct substrate passes, or not checked yet."""
    ceilings: dict[str, dict[str, float | None]]
    generated: dict[str, int]
    """Problem -> how many inputs were generated, before the validity gate."""
    left_out: list[tuple[str, str, str]] = field(default_factory=list)
    """(problem, label, why): inputs the correct substrate fails."""
    not_checked: int = 0
    """Inputs emitted without a stored check (no GPU here)."""


def make_targets(store: Any, problems: list[Problem], folder: Path, env: dict[str, Any], tolerance: float = 1e-2,
                 seeds: int = 1, on_step: Callable[[str], None] | None = None) -> TargetsRun:
    """Targeted inputs for every problem, under its measured ceiling, written to `folder/protocol.toml`.

    `env` is the device (`evaluation.device.describe_device`); with a GPU the store gets the
    ceiling probes' and the inputs' checks, in two runs over every problem. A store that can be
    written keeps the protocol too, under the folder's name."""
    hashes = {p.key: substrate_for(p).content_hash for p in problems}

    def checks_of(problem: Problem) -> dict[str, dict[str, Any]]:
        return store.checked_inputs(problem.key, hashes[problem.key])

    def check_on_gpu(what: str, specs_for: Callable[[Problem], list[InputSpec]], source: str) -> None:
        def unsettled(problem: Problem) -> bool:  # an input with no check, or one to make again
            checks = checks_of(problem)
            return any(s.id not in checks or check_again(checks[s.id]) for s in specs_for(problem))

        todo = [p for p in problems if unsettled(p)]
        if todo and env.get("cuda"):  # every problem in one run: warm workers, every visible GPU
            if on_step:
                on_step(f"{what} of {len(todo)} problems on {env['gpu']}...")
            run_evaluation(store, todo, specs_for, source, env["arch"], env,
                           RunOptions(gpus=env.get("gpus") or 1, checks_only=True))

    check_on_gpu("Measuring the validity ceiling", ceiling_probes, "ceiling")
    ceilings = {p.key: ceiling(checks_of(p), ceiling_probes(p), tolerance) for p in problems}
    generated = {p.key: targeted_specs(p, ceilings[p.key], substrate_for(p).gate_shapes, seeds) for p in problems}
    check_on_gpu("Checking the targeted inputs", lambda p: generated[p.key], "targets")
    run = TargetsRun(folder / "protocol.toml", {}, ceilings, {k: len(v) for k, v in generated.items()})
    for problem in problems:  # the validity gate: an input the correct substrate fails is not emitted
        checks = checks_of(problem)
        kept = []
        for spec in generated[problem.key]:
            check = checks.get(spec.id)
            if check is None or valid_at(check, tolerance):
                kept.append(spec)
                run.not_checked += check is None
                continue
            why = check["note"] or (f"margin {check['margin']:.3g} > {tolerance:g}" if check["margin"] is not None
                                    else "invalid")
            run.left_out.append((problem.key, spec.label, why))
        run.inputs[problem.key] = kept
    name = folder.name or "targets"
    text = emit_targets(run.inputs, name, tolerance)
    with output_file(run.protocol) as out:
        out.write_text(text)
    if not store.readonly:  # audits of this store can name it after the folder is gone
        store.record_protocol(name, text, str(folder))
    return run
