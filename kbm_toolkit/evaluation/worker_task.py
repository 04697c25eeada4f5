"""The GPU side of evaluation: one self-contained task (a problem, its inputs, mutant images) in,
a stream of cell records out. Runs only inside a worker process.

Input-major: each input is built once, the reference computed once, the correct substrate run
(its margin decides the input's validity), then every mutant, then the input is freed. Inputs and
the reference are checked after each mutant and restored if a mutant wrote over them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import Substrate


WARM_KERNEL = 'extern "C" __global__ void kbm_warm(float* p, int n) { if (threadIdx.x < n) p[threadIdx.x] = 0.0f; }'


def warm_up() -> dict[str, float]:
    """Pay a worker's start-up (torch, cuda.core, the CUDA context, lazy imports) before its first
    task; return the seconds each part took.

    The first matmul or convolution creates library handles, and the launch guard's first use
    sets up torch's dispatch modes: doing both here keeps them off the path of a spare that takes
    over after a crash.
    """
    parts: dict[str, float] = {}
    last = time.perf_counter()

    def lap(part: str) -> None:
        nonlocal last
        now = time.perf_counter()
        parts[part], last = now - last, now

    import torch
    from cuda.core import Device

    from kbm_toolkit.cuda.reference import strict_fp32_references
    from kbm_toolkit.cuda.launch_guard import guard
    from kbm_toolkit.cuda.comparison import compare
    from kbm_toolkit.cuda.nvrtc import compile_source
    from kbm_toolkit.cuda.kernels import Kernels, device_arch
    from kbm_toolkit.cuda.signatures import entry_points

    lap("imports")
    strict_fp32_references()
    Device(torch.cuda.current_device()).set_current()
    lap("context")
    with torch.no_grad():
        with guard("warm-up"):
            x = torch.zeros(4, 4, device="cuda")
        compare(x, x.clone())
        lap("guard")
        x @ x  # cuBLAS and cuDNN handles: every restart would otherwise pay them in its first reference
        torch.nn.functional.conv2d(x[None, None], x[None, None, :3, :3])
        lap("handles")
        image = compile_source(WARM_KERNEL, device_arch())
        Kernels(image.cubin, entry_points(WARM_KERNEL), "warm-up").kbm_warm(
            x, 16, grid=1, block=16)  # the first launch of a process costs ~0.5 s
    torch.cuda.synchronize()
    lap("kernel")
    return parts


def unchanged(now: Any, saved: Any) -> bool:
    """Whether a tensor still holds its saved copy's bits (a NaN in an input equals itself here,
    where `torch.equal` would report every cell on a NaN input as writing over it)."""
    import torch

    if now.is_floating_point():
        bits = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[now.element_size()]
        return torch.equal(now.view(bits), saved.view(bits))
    return torch.equal(now, saved)


def evaluate_task(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield `input`, `start` and `cell` records for every (input, mutant) pair not in `done`
    (with a `first_kill` rule, nor any pair that rule skips after this task's own cells). An input
    in `valid` is not checked again: its `rebuilt` record only gives the time building it took.

    After a CUDA error the context is unusable: the task yields the crash cell and a `poisoned`
    record and stops, and the parent resumes the rest in a fresh worker.
    """
    import torch

    from kbm_toolkit.cuda.kernels import LoadedKernel
    from kbm_toolkit.cuda.reference import run_reference, strict_fp32_references
    from kbm_toolkit.evaluation.first_kill import FirstKill, Settled
    from kbm_toolkit.cuda.comparison import compare
    from kbm_toolkit.cuda.nvrtc import Image

    strict_fp32_references()
    problem = Problem.from_record(task["problem"])
    substrate = Substrate(problem.key, Path(task["substrate"]))
    correct = LoadedKernel(substrate, Image(**task["original"]))
    done = {tuple(p) for p in task.get("done", ())}
    stopped: set[str] = set()  # crashed on an earlier input of this task (see evaluation_run._drive)
    # with --first-kill: which protocols this task's own cells show detecting each mutant
    settled = Settled(FirstKill.from_record(task["first_kill"])) if task.get("first_kill") else None
    checked = set(task.get("checked", ()))
    valid = task.get("valid", {})  # input -> the correct kernel's stored margin on it, where it passed
    mutants = task["mutants"]
    kernels: dict[str, LoadedKernel] = {}
    models: dict[tuple, tuple[Any, Any]] = {}

    def kernel_for(m: dict[str, Any]) -> LoadedKernel:
        if m["id"] not in kernels:
            kernels[m["id"]] = LoadedKernel(substrate, Image(**m["image"]), m["kernel_source"],
                                            launcher_source=m.get("launcher_source"))
        return kernels[m["id"]]

    for record in task["specs"]:
        spec = InputSpec.from_record(record)
        pending = [m for m in mutants if (m["id"], spec.id) not in done and m["id"] not in stopped
                   and (settled is None or settled.needed(m["id"], spec.id))]
        if not pending and spec.id in checked:
            continue
        check: dict[str, Any] = {"kind": "input", "input": spec.id, "valid": False}
        begun = time.perf_counter()
        try:
            model, inputs, ref, check["ref_ms"] = run_reference(problem, spec, models)
        except torch.OutOfMemoryError:  # about this GPU's load, not the input: leave it unchecked
            raise KbmError(f"out of GPU memory building input {spec.id} ({spec.label}) and its reference; "
                           "run again with fewer workers per GPU") from None
        except Exception as e:  # the reference rejects this input: it tests nothing
            check["note"] = f"reference raised {type(e).__name__}: {str(e)[:200]}"
            yield check
            continue
        if not isinstance(ref, torch.Tensor):
            check["note"] = f"reference returned {type(ref).__name__}, not a tensor"
            yield check
            continue
        if ref.is_floating_point() and not bool(torch.isfinite(ref).all()):
            check["note"] = "reference is non-finite on this input"
            yield check
            continue
        check["build_ms"] = (time.perf_counter() - begun) * 1000 - check["ref_ms"]  # model and inputs
        if spec.id in valid:  # checked before (another run, or before a restart): the mutants need
            check.update(kind="rebuilt", valid=True, margin=valid[spec.id])  # the reference, not the check
        else:
            magnitude = ref.abs() if ref.is_floating_point() else ref.double().abs()
            check.update(ref_abs_max=float(magnitude.max()) if ref.numel() else 0.0,
                         ref_abs_mean=float(magnitude.mean()) if ref.numel() else 0.0)
            del magnitude
            start = time.perf_counter()
            try:
                cmp = compare(ref, correct(model, inputs))
            except KbmError as e:
                raise KbmError(f"the correct substrate fails on input {spec.id}: {e.line()}") from e
            check.update(valid=cmp.outcome.value == "pass", outcome=cmp.outcome.value, margin=cmp.margin,
                         max_abs=cmp.max_abs, kernel_ms=(time.perf_counter() - start) * 1000)
        if check["valid"]:  # copies to restore from if a mutant writes over them
            start = time.perf_counter()
            saved = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
            ref_saved = ref.clone()
            check["build_ms"] += (time.perf_counter() - start) * 1000
        yield check
        if not check["valid"]:
            continue  # an input that rejects the correct kernel kills nothing
        if settled is not None:
            settled.check(spec.id, check["margin"])
        for m in pending:
            yield {"kind": "start", "mutant": m["id"], "input": spec.id}
            cell: dict[str, Any] = {"kind": "cell", "mutant": m["id"], "input": spec.id}
            try:
                start = time.perf_counter()
                kernel = kernel_for(m)  # loading its image is not the launch: timed apart
                cell["load_ms"] = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                try:
                    out = kernel(model, inputs)
                except torch.OutOfMemoryError:  # maybe another worker's peak: free the cache, try once more
                    torch.cuda.empty_cache()
                    start = time.perf_counter()
                    out = kernel(model, inputs)
                cell["ms"] = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                cmp = compare(ref, out)
                cell.update(outcome=cmp.outcome.value, margin=cmp.margin, max_abs=cmp.max_abs)
                del out
            except KbmError as e:  # e.g. a launcher mutant breaking the contract: this cell crashed
                cell.update(outcome="crash", note=e.line())
            except torch.OutOfMemoryError as e:  # twice: the mutant asks for more than the GPU has
                cell.update(outcome="crash", note=f"OutOfMemoryError: {str(e)[:200]}")
                torch.cuda.empty_cache()
            except Exception as e:  # a CUDA error: the context is gone for good
                cell.update(outcome="crash", note=f"{type(e).__name__}: {str(e)[:200]}")
                yield cell
                yield {"kind": "poisoned", "mutant": m["id"], "input": spec.id}
                return
            if any(isinstance(v, torch.Tensor) and not unchanged(v, s) for v, s in zip(inputs, saved)) \
                    or not unchanged(ref, ref_saved):
                cell["note"] = "wrote over its input or the reference (restored)"
                for v, s in zip(inputs, saved):
                    if isinstance(v, torch.Tensor):
                        v.copy_(s)
                ref.copy_(ref_saved)
            if "ms" in cell:
                cell["check_ms"] = (time.perf_counter() - start) * 1000  # the comparison and the restore checks
            if settled is not None:  # a crash settles its input's protocols, as any detection does
                settled.cell(m["id"], spec.id, cell["outcome"], cell.get("margin"))
            elif cell["outcome"] == "crash" and not task.get("rerun_crashers"):
                stopped.add(m["id"])
            yield cell
        del inputs, saved, ref, ref_saved
        # hand the input's memory back to the GPU: workers and their spares share it, and a cache
        # kept at each worker's largest input once left new spares no memory to start in
        torch.cuda.empty_cache()
