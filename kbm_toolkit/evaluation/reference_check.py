"""`kbm refcheck`: each problem's fp32 reference against its own fp64 evaluation, in a worker.

Per input: the worst margin, how many output positions the fp32 reference gets wrong against
fp64 at each installed protocol's tolerance, how many of its positions move by more than each
tolerance when every floating input moves one unit in the last place (the size of the error any
fp32 implementation makes in its inputs' terms, so a problem that moves that far cannot be
refereed by comparing fp32 kernels), and a checksum of its output (the same output on every
input: the problem ignores its input). What makes a problem unrefereeable
(`analysis.refereeability`) is decided from what this stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from kbm_toolkit.analysis.refereeability import flags, moved_positions, wrong_positions
from kbm_toolkit.evaluation import device as devices
from kbm_toolkit.evaluation.driver import PHASE_TIMEOUT_S
from kbm_toolkit.evaluation.workers import Worker
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.protocols.registry import all_protocols
from kbm_toolkit.vocabulary import REFERENCE_RAISED, RunKind

TARGET = "kbm_toolkit.evaluation.reference_check:refcheck_task"
RAISED = REFERENCE_RAISED
"""How a stored check whose reference raised begins its note: reported as an error, and tried again."""
NOT_FLOATING = "reference output is not a floating tensor"
"""How a stored check of an exact (integer) output begins its note: nothing more to measure there."""
NUDGE_RAISED = "the reference raised on its inputs moved one ulp"
"""How a stored check's note says the nudged forward raised: nothing counted there, not tried again."""
TOLERANCES = (1e-2, 1e-3, 1e-4)
"""Tolerances the positions are counted at when a task names none: those of kbm's built-in protocols."""


def violations(exact: Any, ref: Any, tolerances: Any) -> dict[str, int]:
    """Per tolerance t: the output positions where allclose(exact, ref, atol = rtol = t) fails
    (|exact - ref| > t (1 + |ref|), the candidate being the fp32 reference), non-finite
    mismatches included."""
    import torch

    ref64 = ref.double()
    # a NaN or a mismatched infinity fails at every tolerance, equal infinities at none: counted apart
    special = torch.isinf(exact) | torch.isinf(ref64) | torch.isnan(exact) | torch.isnan(ref64)
    always = int((special & ~(exact == ref64)).sum())
    diff = (exact - ref64).abs_().masked_fill_(special, 0.0)
    scale = ref64.abs_().add_(1)  # in place: outputs of gigabytes are checked too
    return {f"{t:g}": int((diff > scale * t).sum()) + always for t in sorted(tolerances, reverse=True)}


def nudged(inputs: list[Any]) -> list[Any]:
    """The inputs with every floating value moved one representable value up (toward +inf)."""
    import torch

    return [torch.nextafter(v, torch.full_like(v, float("inf"))) if isinstance(v, torch.Tensor) and v.is_floating_point()
            else v for v in inputs]


def refcheck_task(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield, per input spec, the fp32 reference's margin against its fp64 evaluation, max |ref|,
    the positions it misses fp64 at at each of `tolerances` (allclose, atol = rtol), the positions
    where it moves past each tolerance when its floating inputs move one ulp, and the checksum of
    its output."""
    import torch

    from kbm_toolkit.cuda.checksum import Watch
    from kbm_toolkit.cuda.reference import ModelCache, in_fp64, run_fp64, run_reference, strict_fp32_references
    from kbm_toolkit.cuda.comparison import compare
    from kbm_toolkit.problems.tensors import spec_inputs

    strict_fp32_references()
    device = task.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    problem = Problem.from_record(task["problem"])
    models = ModelCache()
    doubles: dict[tuple, Any] = {}
    for record in task["specs"]:
        spec = InputSpec.from_record(record)
        row: dict[str, Any] = {"input": spec.id, "device": device}
        try:
            model, inputs, ref, _ = run_reference(problem, spec, models, device)
        except Exception as e:  # the reference rejects this input
            row["note"] = f"{RAISED} {type(e).__name__}: {str(e)[:200]}"
            yield row
            continue
        if not isinstance(ref, torch.Tensor) or not ref.is_floating_point():
            row["note"] = f"{NOT_FLOATING}: exact, nothing to check"
            yield row
            continue
        key = spec.model_key(problem)
        if key not in doubles:
            doubles[key] = in_fp64(model)
        module, _ = models.get(problem, spec, device)
        # drawing the inputs again leaves the generators as the fp32 forward found them: a forward
        # that draws (LSTM's initial state) draws the same values in fp64
        spec_inputs(spec, module, device)
        exact = run_fp64(doubles[key], inputs)
        cmp = compare(exact, ref.double())
        tolerances = task.get("tolerances", TOLERANCES)
        row.update(fp64_margin=cmp.margin, ref_abs_max=float(ref.abs().max()) if ref.numel() else 0.0,
                   positions=ref.numel(), output_checksum=f"{Watch([ref]).sums[0]:016x}" if ref.numel() else "",
                   violations=violations(exact, ref, tolerances))
        notes = [f"the fp32 reference is {cmp.outcome.value} where fp64 is not"] if cmp.outcome.value != "pass" else []
        del exact, inputs
        try:  # drawn again, as for fp64: a forward that draws finds its generators as the first forward did
            with torch.no_grad():
                moved = model(*nudged(spec_inputs(spec, module, device)))
            row["nudge_violations"] = violations(ref.double(), moved, tolerances)
            del moved
        except Exception as e:
            notes.append(f"{NUDGE_RAISED}: {type(e).__name__}: {str(e)[:200]}")
        if notes:
            row["note"] = "; ".join(notes)
        yield row
        del ref


def check_references(store: Any, problems: list[Problem], protocol: Protocol, env: dict[str, Any]) -> dict[str, str]:
    """Store the reference checks `protocol`'s inputs lack, in a worker; return problems that failed."""
    device = "cuda" if env.get("cuda") else "cpu"
    run_id = store.start_run(RunKind.REFCHECK, env)
    # checked again: a reference that raised (a package installed since, the file edited), and a
    # check from before refcheck counted positions, took checksums and moved the inputs one ulp
    done = {i for i, r in store.reference_checks().items()
            if (r["note"] or "").startswith(NOT_FLOATING)
            or (r["violations"] is not None and (r["nudge_violations"] is not None or NUDGE_RAISED in (r["note"] or "")))}
    tolerances = sorted({p.tolerance for p in all_protocols()} | {protocol.tolerance})
    failed: dict[str, str] = {}
    with Worker(TARGET) as worker:
        for problem in problems:
            specs = [s for s in protocol.specs(problem) if s.id not in done]
            if not specs:
                continue
            store.record_problem(problem)
            store.record_inputs(specs, protocol.name)
            task = {"problem": problem.record(), "specs": [s.record() for s in specs], "device": device,
                    "tolerances": tolerances}
            for reply in worker.stream(task, timeout=PHASE_TIMEOUT_S):
                if reply.status == "item":
                    store.record_reference_check(run_id, reply.value)
                elif reply.status != "ok":
                    failed[problem.key] = f"{reply.status}: {(reply.message or 'no message').splitlines()[0]}"
    store.finish_run(run_id)
    return failed


@dataclass
class RefcheckRow:
    """One problem's reference checks under a protocol."""

    problem: str
    inputs: int
    """The protocol's inputs with a stored check."""
    worst_fp64_margin: float
    largest_ref: float
    flag: str = ""
    """Why the protocol cannot referee the problem ("" when it can)."""
    raised: str = ""
    """What the reference raised, on how many of the inputs ("" when it ran on every one)."""
    wrong: int | None = None
    """Output positions the fp32 reference gets wrong against fp64 at the protocol's tolerance, on
    its worst input (None: no check counted them)."""
    positions: int | None = None
    """The output positions of that input."""
    moved: int | None = None
    """Output positions the fp32 reference moves by more than the protocol's tolerance when its
    floating inputs move one ulp, on its worst input (None: no check counted them)."""

    @property
    def verdict(self) -> str:
        """`ok`, `flag` (cannot be refereed) or `error` (the reference raised: nothing was checked there)."""
        return "error" if self.raised else "flag" if self.flag else "ok"


@dataclass
class Refcheck:
    """`kbm refcheck`: every selected problem's row, where the checks ran, and problems whose check stopped."""

    protocol: Protocol
    device: str
    rows: list[RefcheckRow]
    stopped: dict[str, str] = field(default_factory=dict)


def refcheck(store: Any, problems: list[Problem], protocol: Protocol) -> Refcheck:
    """Check each problem's reference against its fp64 evaluation on `protocol`'s inputs (the GPU when
    there is one, else the CPU; checks already stored are kept), then judge each problem."""
    env = devices.describe_device()
    stopped = check_references(store, problems, protocol, env)
    checks = store.reference_checks()
    flagged = flags(protocol, problems, checks)
    rows = []
    for problem in problems:
        mine = [checks[s.id] for s in protocol.specs(problem) if s.id in checks]
        raised = [r["note"] for r in mine if (r["note"] or "").startswith(RAISED)]
        why = f"{raised[0]} (on {len(raised)} of {len(mine)} inputs)" if raised else ""
        if problem.key in stopped:  # what was stored before the check stopped says nothing of the rest
            why = f"the check stopped: {stopped[problem.key]}"
        counted = [c for c in (wrong_positions(r, protocol.tolerance) for r in mine) if c is not None]
        worst = max(counted, default=None)
        moved = [c[0] for c in (moved_positions(r, protocol.tolerance) for r in mine) if c is not None]
        rows.append(RefcheckRow(problem.key, len(mine), max((r["fp64_margin"] or 0.0 for r in mine), default=0.0),
                                max((r["ref_abs_max"] or 0.0 for r in mine), default=0.0), flagged.get(problem.key, ""),
                                why, *(worst or (None, None)), max(moved, default=None)))
    return Refcheck(protocol, "cuda" if env.get("cuda") else "cpu", rows, stopped)
