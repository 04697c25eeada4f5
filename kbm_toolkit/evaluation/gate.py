"""The gate: a substrate may be mutated only once it passes its reference on official and harder inputs.

Harder inputs are the official draw negated and tripled, a sign-mixed normal redraw, and any
odd shapes the substrate declares. An input on which the reference itself is non-finite or raises
is skipped (it tests nothing). A failing gate is the substrate's fault, not the protocol's.

Here the parent's side (what a gate is, compiling, scheduling worker tasks, writing the store);
the GPU side, run in a worker, is `gate_task`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbm_toolkit.cuda.signatures import kernel_signatures
from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.input_spec import InputSpec, official_specs
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import OFFICIAL_TRIALS
from kbm_toolkit.problems.substrate import Substrate, has_substrate, substrate_for
from kbm_toolkit.vocabulary import GateStatus, RunKind

GATE_TOLERANCE = 1e-3
"""The tightest tolerance an adapter ships besides KernelBench main's 1e-4 (DESIGN.md)."""


@dataclass
class GateRow:
    """One input of the gate and how the substrate fared on it."""

    label: str
    spec: dict[str, Any]
    spec_id: str
    outcome: str
    """`pass`, `value`, `nonfinite`, `shape`, `crash`, `skipped` (reference unusable), or after an
    fp64 adjudication `fp64-pass` (the substrate is right, the fp32 reference off) and `ceiling`
    (the input is past the validity ceiling: correct fp32 kernels disagree there)."""
    margin: float | None = None
    max_abs: float | None = None
    ref_ms: float | None = None
    kernel_ms: float | None = None
    note: str = ""


@dataclass
class GateResult:
    """The verdict on one substrate."""

    problem: str
    status: str
    """`passed`, `failed` (wrong on some input), `error` (could not be run at all), or
    `unrefereeable` (the reference misses its own fp64 evaluation on an official input)."""
    tolerance: float
    worst_margin: float | None = None
    rows: list[GateRow] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GateResult":
        rows = [GateRow(**r) for r in data.pop("rows", [])]
        return cls(**data, rows=rows)


def gate_specs(problem: Problem, substrate: Substrate, trials: int = OFFICIAL_TRIALS) -> list[InputSpec]:
    """The official trials, then the harder valid set, as input specs."""
    specs = official_specs(problem, trials)
    key, s0 = problem.key, specs[0].seed
    specs += [
        InputSpec.make(key, s0, transforms=[{"op": "scale", "by": -1.0}], label="official x -1"),
        InputSpec.make(key, s0, transforms=[{"op": "scale", "by": 3.0}], label="official x 3"),
        InputSpec.make(key, s0, base="normal", params=(0.0, 1.0), label="normal(0, 1)"),
    ]
    for shape in substrate.gate_shapes:
        words = ", ".join(f"{k}={v}" for k, v in shape.items())
        specs += [InputSpec.make(key, s0, shape=shape, label=f"official, {words}"),
                  InputSpec.make(key, s0, base="normal", params=(0.0, 1.0), shape=shape,
                                 label=f"normal(0, 1), {words}")]
    return specs


@dataclass
class Compiled:
    """A problem's substrate compiled for one arch, or why it could not be."""

    problem: Problem
    substrate: Substrate | None
    image: Any = None
    error: str = ""


def compile_substrates(problems: list[Problem], arch: str, store: Any = None,
                       substrates_root: Path | None = None) -> list[Compiled]:
    """Compile every problem's substrate with NVRTC; record images (or errors) in `store`."""
    from kbm_toolkit.cuda.nvrtc import compile_source

    done = []
    for problem in problems:
        item = Compiled(problem, None)
        try:
            item.substrate = substrate_for(problem, substrates_root)
            kernels = sorted(kernel_signatures(item.substrate))
            item.image = compile_source(item.substrate.source, arch, where=str(item.substrate.kernel_path))
        except KbmError as e:
            item.error = e.line()
            kernels = []
        if store is not None:
            store.record_problem(problem)
            if item.substrate is not None:
                store.record_compile(problem.key, item.substrate.source_hash,
                                     item.image.image_hash if item.image else None, arch, kernels,
                                     item.image.compile_ms if item.image else None, item.error)
        done.append(item)
    return done


def gate_compiled(compiled: list[Compiled], store: Any, worker: Any, env: dict[str, Any],
                  tolerance: float = GATE_TOLERANCE, timeout: float = 900.0,
                  on_result: Any = None) -> list[GateResult]:
    """Gate each compiled substrate in the worker; every verdict is committed as it arrives."""
    run_id = store.start_run(RunKind.GATE, env)
    results = []
    for item in compiled:
        if item.error:
            result = GateResult(item.problem.key, "error", tolerance, message=item.error)
        else:
            task = {"op": "gate", "problem": item.problem.record(),
                    "substrate": str(item.substrate.folder), "image": asdict(item.image), "tolerance": tolerance}
            reply = worker.run(task, timeout)
            if reply.status == "ok":
                result = GateResult.from_dict(reply.value)
            else:
                status = "error" if reply.status == "error" else "failed"
                result = GateResult(item.problem.key, status, tolerance, message=f"{reply.status}: {reply.message}")
        if any(row.outcome == "crash" for row in result.rows):
            worker.retire()  # a CUDA error may have poisoned the context: the next task gets a fresh one
        store.record_gate(run_id, result)
        results.append(result)
        if on_result:
            on_result(result)
    store.finish_run(run_id)
    return results


GATE_WORKER = "kbm_toolkit.evaluation.gate_task:worker_task"
"""The gate's worker entry point (the GPU side is `gate_task`): `describe` the device, or `gate` a substrate."""


@dataclass
class GateRun:
    """What `gate_problems` did: the compiles, the verdicts (none without a GPU), the device."""

    compiled: list[Compiled]
    results: list[GateResult]
    env: dict[str, Any]
    resumed: int = 0
    """Substrates `resume` skipped: the store has a verdict for them at their current source."""

    @property
    def failed_compiles(self) -> list[Compiled]:
        """The substrates NVRTC rejected."""
        return [c for c in self.compiled if c.error]

    @property
    def all_passed(self) -> bool:
        """Whether every verdict is `passed` (or `unrefereeable`: no checker can referee it)."""
        return all(r.status in (GateStatus.PASSED, GateStatus.UNREFEREEABLE) for r in self.results)


def gate_problems(problems: list[Problem], store: Any, arch: str | None = None, tolerance: float = GATE_TOLERANCE,
                  timeout: float = 900.0, compile_only: bool = False, resume: bool = False,
                  on_result: Any = None) -> GateRun:
    """`kbm gate`: compile every substrate, then (with a GPU, unless `compile_only`) gate each in a
    worker, committing every verdict as it arrives. `resume` skips substrates the store already has
    a verdict for at this tolerance and source."""
    from kbm_toolkit.cuda.nvrtc import DEFAULT_ARCH
    from kbm_toolkit.evaluation.workers import Worker

    env: dict[str, Any] = {"cuda": False}
    worker = Worker(GATE_WORKER)
    try:
        if not compile_only:
            reply = worker.run({"op": "describe"}, timeout=120)
            env = reply.value if reply.status == "ok" else env
        resumed = 0
        if resume:
            done = {r["problem"]: r["source_hash"] for r in store.substrates()
                    if r["gate_run"] is not None and r["gate_tolerance"] == tolerance}
            kept = [p for p in problems if not has_substrate(p) or done.get(p.key) != substrate_for(p).source_hash]
            resumed, problems = len(problems) - len(kept), kept
        compiled = compile_substrates(problems, arch or env.get("arch") or DEFAULT_ARCH, store)
        results = (gate_compiled(compiled, store, worker, env, tolerance, timeout, on_result)
                   if env.get("cuda") else [])
    finally:
        worker.close()
    return GateRun(compiled, results, env, resumed)
