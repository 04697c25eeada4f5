"""Can a protocol referee a problem at all? The reference's own precision and the vacuity band.

Two things make a problem useless to a checker whatever the kernel does: a reference that misses
its own fp64 evaluation by more than the tolerance (two correct fp32 kernels then disagree), and
an output so small that an all-zeros kernel passes (max |ref| <= t: allclose(0, ref) holds). The
first is measured here, in a worker, on the protocol's inputs; the second needs only the
reference magnitudes that every evaluation stores. The audit leaves flagged problems out of its
scores and lists them.
"""

from __future__ import annotations

from typing import Any, Iterator

from kbm_toolkit.problems.input_spec import InputSpec

TARGET = "kbm_toolkit.evaluation.reference_check:refcheck_task"


def refcheck_task(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield, per input spec, the fp32 reference's margin against its fp64 evaluation and max |ref|."""
    import torch

    from kbm_toolkit.evaluation.worker_task import problem_from_record
    from kbm_toolkit.cuda.execution import in_fp64, run_fp64, run_reference, strict_fp32_references
    from kbm_toolkit.cuda.comparison import compare

    strict_fp32_references()
    device = task.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    problem = problem_from_record(task["problem"])
    models: dict[tuple, tuple[Any, Any]] = {}
    doubles: dict[tuple, Any] = {}
    for record in task["specs"]:
        spec = InputSpec.from_record(record)
        row: dict[str, Any] = {"input": spec.id, "device": device}
        try:
            model, inputs, ref, _ = run_reference(problem, spec, models, device)
        except Exception as e:  # the reference rejects this input
            row["note"] = f"reference raised {type(e).__name__}: {str(e)[:200]}"
            yield row
            continue
        if not isinstance(ref, torch.Tensor) or not ref.is_floating_point():
            row["note"] = "reference output is not a floating tensor: exact, nothing to check"
            yield row
            continue
        if spec.model_key not in doubles:
            doubles[spec.model_key] = in_fp64(model)
        exact = run_fp64(doubles[spec.model_key], inputs)
        cmp = compare(exact, ref.double())
        row.update(fp64_margin=cmp.margin, ref_abs_max=float(ref.abs().max()) if ref.numel() else 0.0)
        if cmp.outcome.value != "pass":
            row["note"] = f"the fp32 reference is {cmp.outcome.value} where fp64 is not"
        yield row
        del inputs, ref, exact


def check_references(store: Any, problems: list[Any], protocol: Any, env: dict[str, Any]) -> dict[str, str]:
    """Store the reference checks `protocol`'s inputs lack, in a worker; return problems that failed."""
    from dataclasses import asdict

    from kbm_toolkit.evaluation.run import PHASE_TIMEOUT_S
    from kbm_toolkit.evaluation.workers import Worker

    device = "cuda" if env.get("cuda") else "cpu"
    run_id = store.start_run("refcheck", env)
    done, failed = set(store.reference_checks()), {}
    with Worker(TARGET) as worker:
        for problem in problems:
            specs = [s for s in protocol.specs(problem) if s.id not in done]
            if not specs:
                continue
            store.record_problem(problem)
            store.record_inputs(specs, protocol.name)
            task = {"problem": {**asdict(problem), "path": str(problem.path)},
                    "specs": [s.record() for s in specs], "device": device}
            for reply in worker.stream(task, timeout=PHASE_TIMEOUT_S):
                if reply.status == "item":
                    store.record_reference_check(run_id, reply.value)
                elif reply.status != "ok":
                    failed[problem.key] = f"{reply.status}: {(reply.message or 'no message').splitlines()[0]}"
    store.finish_run(run_id)
    return failed


def flags(protocol: Any, matrices: list[Any], checks: dict[str, dict[str, Any]],
          tolerance: float | None = None) -> dict[str, str]:
    """Problems `protocol` cannot referee at `tolerance` (default its own), with the reason.

    `checks` are stored reference checks by input id. A problem is flagged when the protocol
    excludes it, when its reference misses fp64 by more than the tolerance on one of the
    protocol's inputs, or when every input whose reference magnitude is known has max |ref| <=
    tolerance (an all-zeros output passes).
    """
    t = protocol.tolerance if tolerance is None else tolerance
    out: dict[str, str] = {}
    for mx in matrices:
        if not protocol.applies_to(mx.problem):  # its inputs list is empty: every witness would count as missed
            out[mx.problem.key] = "the protocol excludes it (`exclude` in its protocol file)"
            continue
        try:
            specs = protocol.specs(mx.problem)
        except Exception:  # a problem the protocol cannot describe is reported elsewhere
            continue
        worst = max(((checks[s.id].get("fp64_margin") or 0.0, s.label) for s in specs if s.id in checks),
                    default=None)
        if worst is not None and worst[0] > t:
            out[mx.problem.key] = f"the reference misses its fp64 evaluation by {worst[0]:.1e} > {t:g} ({worst[1]})"
            continue
        magnitudes = [m for s in specs
                      for m in ((mx.checks.get(s.id) or {}).get("ref_abs_max"), (checks.get(s.id) or {}).get("ref_abs_max"))
                      if m is not None]
        if magnitudes and max(magnitudes) <= t:
            out[mx.problem.key] = f"vacuous: max |ref| {max(magnitudes):.1e} <= {t:g} on every input, an all-zeros output passes"
    return out
