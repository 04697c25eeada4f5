"""Running a problem's reference: in strict fp32, on one input spec, and in fp64 to adjudicate."""

from __future__ import annotations

import copy
import time
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import PYTORCH_DEFAULT, REFERENCES, STRICT

from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.tensors import spec_inputs, spec_model


def strict_fp32_references() -> None:
    """Run references in IEEE fp32: no TF32 in cuDNN convolutions or cuBLAS matmuls.

    PyTorch lets cuDNN use TF32 by default, which puts ~1e-3 relative noise into a convolution
    reference; a verdict at 1e-3 would then be about the reference's rounding, not the protocol.
    """
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


@contextmanager
def reference_environment(name: str) -> Iterator[None]:
    """Inside, references compute as `name` (`kbm_toolkit.judging.REFERENCES`) says; the flags
    are put back after. `pytorch-default` is what a benchmark that never touches torch.backends
    gets: cuDNN convolutions in TF32, cuBLAS matmuls in fp32."""
    cudnn, matmul = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    if name == STRICT:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = False, False
    elif name == PYTORCH_DEFAULT:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False
    else:
        raise KbmError(f"unknown reference environment {name!r} (known: {', '.join(REFERENCES)})")
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, matmul


def run_reference(problem: Problem, spec: InputSpec, models: dict[tuple, tuple[Any, Any]],
                  device: str = "cuda") -> tuple[Any, list[Any], Any, float]:
    """Build `spec`'s inputs and run the reference on them: (model, inputs, output, wall ms).

    Models are cached in `models` by the spec's model key (shape overrides and parameter init),
    so an input-major loop builds each model once. Whatever the reference raises propagates.
    """
    if spec.model_key not in models:
        module = problem.load(dict(spec.shape))
        models[spec.model_key] = (module, spec_model(spec, module, device))
    module, model = models[spec.model_key]
    inputs = spec_inputs(spec, module, device)
    start = time.perf_counter()
    with torch.no_grad():
        ref = model(*inputs)
    if device != "cpu":
        torch.cuda.synchronize()
    return model, inputs, ref, (time.perf_counter() - start) * 1000


def in_fp64(model: Any) -> Any:
    """A copy of the reference model with its parameters and buffers in fp64."""
    return copy.deepcopy(model).double()


def run_fp64(model64: Any, inputs: list[Any]) -> Any:
    """The fp64 model on the inputs, floating ones promoted to fp64: the reference's exact answer."""
    with torch.no_grad():
        return model64(*[v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs])
