"""The gate: a substrate may be mutated only once it passes its reference on official and harder inputs.

Harder inputs are the official draw negated and tripled, a sign-mixed normal redraw, and any
odd shapes the substrate declares. An input on which the reference itself is non-finite or raises
is skipped (it tests nothing). A failing gate is the substrate's fault, not the protocol's.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbm_toolkit.cuda.signatures import kernel_signatures
from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.input_spec import InputSpec, official_specs
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import OFFICIAL_TRIALS
from kbm_toolkit.problems.substrate import Substrate, has_substrate, substrate_for
from kbm_toolkit.vocabulary import GateStatus

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


def fp64_adjudication(model: Any, inputs: list[Any], ref: Any, out: Any, tolerance: float) -> tuple[str, str]:
    """When the substrate misses the fp32 reference, ask the reference's fp64 evaluation who is off.

    `fp64-pass`: the substrate is within tolerance of fp64 (the fp32 reference is the one off).
    `ceiling`: the fp32 reference itself misses fp64 by more than the tolerance and the substrate
    is no further off than twice that: the input is past the validity ceiling, where two correct
    fp32 kernels legitimately disagree. Otherwise `value`: the substrate is wrong.
    """
    from kbm_toolkit.cuda.reference import in_fp64, run_fp64
    from kbm_toolkit.cuda.comparison import compare

    exact = run_fp64(in_fp64(model), inputs)
    ref_off = compare(exact, ref.double()).margin
    sub_off = compare(exact, out.double()).margin
    words = f"vs fp64: substrate {sub_off:.2e}, fp32 reference {ref_off:.2e}"
    if sub_off <= tolerance:
        return "fp64-pass", words
    if ref_off > tolerance and sub_off <= 2 * ref_off:
        return "ceiling", words
    return "value", words


def unrefereeable(official: list[Any], again: Any, tolerance: float) -> str:
    """Why no checker can referee this problem, or "": a random or a constant reference.

    `again` is a second evaluation of the first official input: if it differs from the first
    beyond the tolerance, the reference is random (training-mode dropout). If every official
    output is one and the same constant, any kernel that writes that constant passes.
    """
    import torch

    from kbm_toolkit.cuda.comparison import compare

    first = official[0]
    if not isinstance(first, torch.Tensor):
        return ""
    if again is not None:
        if not compare(first, again).passes(tolerance):
            return "random reference: two evaluations of one official input differ"
        return ""
    if first.numel() and all(isinstance(o, torch.Tensor) and o.shape == first.shape for o in official):
        value = first.reshape(-1)[0]
        if all(bool((o == value).all()) for o in official):
            return f"constant reference: every official output is {float(value):g}"
    return ""


def gate_task(task: dict[str, Any]) -> dict[str, Any]:
    """Worker task: gate one substrate with a compiled image (runs on the GPU)."""
    from kbm_toolkit.cuda.nvrtc import Image

    problem = Problem.from_record(task["problem"])
    substrate = Substrate(problem.key, Path(task["substrate"]))
    image = Image(**task["image"])
    return run_gate(problem, substrate, image, task.get("tolerance", GATE_TOLERANCE)).to_dict()


def run_gate(problem: Problem, substrate: Substrate, image: Any, tolerance: float = GATE_TOLERANCE,
             device: str = "cuda") -> GateResult:
    """Run the substrate against its reference on every gate input."""
    import torch

    from kbm_toolkit.cuda.kernels import LoadedKernel
    from kbm_toolkit.cuda.reference import run_reference, strict_fp32_references
    from kbm_toolkit.cuda.comparison import compare

    strict_fp32_references()
    result = GateResult(problem.key, "passed", tolerance)
    kernel = LoadedKernel(substrate, image)
    built: dict[tuple, tuple[Any, Any]] = {}
    official: list[Any] = []
    for spec in gate_specs(problem, substrate):
        row = GateRow(spec.label, spec.record(), spec.id, "skipped")
        result.rows.append(row)
        try:
            model, inputs, ref, row.ref_ms = run_reference(problem, spec, built, device)
            if row.label.startswith("official"):
                official.append(ref.detach().clone() if isinstance(ref, torch.Tensor) else ref)
                if len(official) == 1:
                    with torch.no_grad():
                        again = model(*inputs)
                    why = unrefereeable(official, again, tolerance)
                    if why:
                        result.status, result.message, row.note = "unrefereeable", why, why
        except KbmError as e:
            row.note = f"reference unusable: {e.message}"
            continue
        except Exception as e:  # the reference may reject an odd shape: not the substrate's fault
            row.note = f"reference raised {type(e).__name__}: {str(e)[:160]}"
            continue
        if isinstance(ref, torch.Tensor) and ref.is_floating_point() and not bool(torch.isfinite(ref).all()):
            row.note = "reference is non-finite on this input"
            continue
        try:
            start = time.perf_counter()
            out = kernel(model, inputs)
            row.kernel_ms = (time.perf_counter() - start) * 1000
            cmp = compare(ref, out).judged(tolerance)
            row.outcome, row.margin, row.max_abs = cmp.outcome.value, cmp.margin, cmp.max_abs
            if row.outcome == "value":
                row.outcome, row.note = fp64_adjudication(model, inputs, ref, out, tolerance)
        except KbmError as e:
            row.outcome, row.note = "crash", e.line()
            result.status, result.message = "error", e.line()
            break
        except Exception as e:  # a CUDA error poisons the context: stop this substrate here
            row.outcome, row.note = "crash", f"{type(e).__name__}: {str(e)[:300]}"
            result.status, result.message = "failed", row.note
            break
        finally:
            del inputs
        if row.outcome == "ceiling" and row.label.startswith("official") and result.status == "passed":
            result.status = "unrefereeable"
            result.message = f"{row.label}: the fp32 reference misses its own fp64 evaluation; {row.note}"
        elif row.outcome not in ("pass", "fp64-pass", "ceiling") and result.status in ("passed", "unrefereeable"):
            result.status = "failed"
            result.message = f"{row.label}: {row.outcome} (margin {row.margin:.3g})"
    if result.status == "passed" and len(official) == OFFICIAL_TRIALS:
        why = unrefereeable(official, None, tolerance)
        if why:
            result.status, result.message = "unrefereeable", why
    ran = [r.margin for r in result.rows if r.margin is not None and r.outcome in ("pass", "value")]
    result.worst_margin = max(ran) if ran else None
    if not any(r.outcome != "skipped" for r in result.rows) and result.status == "passed":
        result.status, result.message = "error", "the reference was unusable on every gate input"
    return result


# -- orchestration (parent side: compiles, schedules worker tasks, writes the store) ------------

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


def worker_task(task: dict[str, Any]) -> Any:
    """The gate worker's entry point: `describe` the device, or `gate` one substrate."""
    if task["op"] == "describe":
        from kbm_toolkit.cuda.environment import describe_task

        return describe_task()
    return gate_task(task)


def gate_compiled(compiled: list[Compiled], store: Any, worker: Any, env: dict[str, Any],
                  tolerance: float = GATE_TOLERANCE, timeout: float = 900.0,
                  on_result: Any = None) -> list[GateResult]:
    """Gate each compiled substrate in the worker; every verdict is committed as it arrives."""
    run_id = store.start_run("gate", env)
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


GATE_WORKER = "kbm_toolkit.evaluation.gate:worker_task"


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
