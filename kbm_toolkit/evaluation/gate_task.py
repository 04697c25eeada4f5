"""The GPU side of the gate: one substrate against its reference on every gate input, inside a
worker process (`gate.GATE_WORKER`), which also describes the device it sees.

Rows are judged one by one (`_judged`, then `_weigh`); when the substrate misses the fp32
reference, the reference's fp64 evaluation decides who is off (`fp64_adjudication`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.evaluation.gate import GATE_TOLERANCE, GateResult, GateRow, gate_specs
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import OFFICIAL_TRIALS
from kbm_toolkit.problems.substrate import Substrate
from kbm_toolkit.vocabulary import REFERENCE_RAISED

if TYPE_CHECKING:  # torch comes with it: imported where the gate runs
    from kbm_toolkit.cuda.reference import ModelCache

Built = tuple[Any, list[Any], Any]
"""One gate input, built: the reference model, its inputs, and the reference's output."""


def worker_task(task: dict[str, Any]) -> Any:
    """The gate worker's entry point: `describe` the device, or `gate` one substrate."""
    if task["op"] == "describe":
        from kbm_toolkit.cuda.environment import describe_task

        return describe_task()
    return gate_task(task)


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
    from kbm_toolkit.cuda.kernels import LoadedKernel
    from kbm_toolkit.cuda.reference import ModelCache, strict_fp32_references

    strict_fp32_references()
    result = GateResult(problem.key, "passed", tolerance)
    kernel = LoadedKernel(substrate, image)
    built = ModelCache()
    official: list[Any] = []
    for spec in gate_specs(problem, substrate):
        row = GateRow(spec.label, spec.record(), spec.id, "skipped")
        result.rows.append(row)
        made = _reference(problem, spec, built, device, row, result, official)
        if made is None:
            continue
        going_on = _judged(kernel, made, row, result)
        del made  # the inputs, before the next ones are built
        if not going_on:
            break
        _weigh(row, result)
    _conclude(result, official)
    return result


def _reference(problem: Problem, spec: InputSpec, built: "ModelCache", device: str,
               row: GateRow, result: GateResult, official: list[Any]) -> Built | None:
    """Build one gate input and run the reference on it; None, and why in `row`, where the reference
    is unusable. Official outputs are kept in `official`; the first is also evaluated again, and a
    reference that differs from itself there makes the substrate unrefereeable."""
    import torch

    from kbm_toolkit.cuda.reference import run_reference

    try:
        model, inputs, ref, row.ref_ms = run_reference(problem, spec, built, device)
        if row.label.startswith("official"):
            official.append(ref.detach().clone() if isinstance(ref, torch.Tensor) else ref)
            if len(official) == 1:
                with torch.no_grad():
                    again = model(*inputs)
                why = unrefereeable(official, again, result.tolerance)
                if why:
                    result.status, result.message, row.note = "unrefereeable", why, why
    except KbmError as e:
        row.note = f"reference unusable: {e.message}"
        return None
    except Exception as e:  # the reference may reject an odd shape: not the substrate's fault
        row.note = f"{REFERENCE_RAISED} {type(e).__name__}: {str(e)[:160]}"
        return None
    if isinstance(ref, torch.Tensor) and ref.is_floating_point() and not bool(torch.isfinite(ref).all()):
        row.note = "reference is non-finite on this input"
        return None
    return model, inputs, ref


def _judged(kernel: Any, made: Built, row: GateRow, result: GateResult) -> bool:
    """Run the substrate on one built input and judge its output into `row`; False when the
    substrate cannot go on (the launch raised: `result` says so)."""
    from kbm_toolkit.cuda.comparison import compare

    model, inputs, ref = made
    try:
        start = time.perf_counter()
        out = kernel(model, inputs)
        row.kernel_ms = (time.perf_counter() - start) * 1000
        cmp = compare(ref, out).judged(result.tolerance)
        row.outcome, row.margin, row.max_abs = cmp.outcome.value, cmp.margin, cmp.max_abs
        if row.outcome == "value":
            row.outcome, row.note = fp64_adjudication(model, inputs, ref, out, result.tolerance)
    except KbmError as e:
        row.outcome, row.note = "crash", e.line()
        result.status, result.message = "error", e.line()
        return False
    except Exception as e:  # a CUDA error poisons the context: stop this substrate here
        row.outcome, row.note = "crash", f"{type(e).__name__}: {str(e)[:300]}"
        result.status, result.message = "failed", row.note
        return False
    return True


def _weigh(row: GateRow, result: GateResult) -> None:
    """What one judged row does to the substrate's verdict."""
    if row.outcome == "ceiling" and row.label.startswith("official") and result.status == "passed":
        result.status = "unrefereeable"
        result.message = f"{row.label}: the fp32 reference misses its own fp64 evaluation; {row.note}"
    elif row.outcome not in ("pass", "fp64-pass", "ceiling") and result.status in ("passed", "unrefereeable"):
        result.status = "failed"
        result.message = f"{row.label}: {row.outcome} (margin {row.margin:.3g})"


def _conclude(result: GateResult, official: list[Any]) -> None:
    """The verdict once every row is in: a constant reference, the worst margin, no usable input."""
    if result.status == "passed" and len(official) == OFFICIAL_TRIALS:
        why = unrefereeable(official, None, result.tolerance)
        if why:
            result.status, result.message = "unrefereeable", why
    ran = [r.margin for r in result.rows if r.margin is not None and r.outcome in ("pass", "value")]
    result.worst_margin = max(ran) if ran else None
    if not any(r.outcome != "skipped" for r in result.rows) and result.status == "passed":
        result.status, result.message = "error", "the reference was unusable on every gate input"


NO_DIGIT_MARGIN = 1.0
"""A margin from fp64 at which the fp32 reference has an element with no correct digit."""


def fp64_adjudication(model: Any, inputs: list[Any], ref: Any, out: Any, tolerance: float) -> tuple[str, str]:
    """When the substrate misses the fp32 reference, ask the reference's fp64 evaluation who is off.

    `fp64-pass`: the substrate is within tolerance of fp64 (the fp32 reference is the one off).
    `ceiling`: the fp32 reference itself misses fp64 by more than the tolerance and the substrate
    is no further off than twice that: the input is past the validity ceiling, where two correct
    fp32 kernels legitimately disagree. Also `ceiling`, however far off the substrate: a reference
    that misses fp64 by a margin of 1 or more, an element off by more than its own size (plus 1),
    has no correct digit there, and no distance from it says anything (level3/48 Mamba2, outputs
    up to 1e20: the reference 1.3-49 from fp64 on every official and random input, the substrate
    0.7-271). Otherwise `value`: the substrate is wrong.
    """
    from kbm_toolkit.cuda.reference import in_fp64, run_fp64
    from kbm_toolkit.cuda.comparison import compare

    exact = run_fp64(in_fp64(model), inputs)
    ref_off = compare(exact, ref.double()).margin
    sub_off = compare(exact, out.double()).margin
    words = f"vs fp64: substrate {sub_off:.2e}, fp32 reference {ref_off:.2e}"
    if sub_off <= tolerance:
        return "fp64-pass", words
    if ref_off > tolerance and (sub_off <= 2 * ref_off or ref_off >= NO_DIGIT_MARGIN):
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
