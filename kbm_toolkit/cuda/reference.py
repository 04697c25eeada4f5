"""Running a problem's reference: in strict fp32, on one input spec, and in fp64 to adjudicate."""

from __future__ import annotations

import copy
import time
import types
from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode

from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import PYTORCH_DEFAULT, REFERENCES, STRICT
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem, ProblemModule
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


class ModelCache:
    """Reference models, each built once per `InputSpec.model_key` (the overrides of the constants
    the model can read, its parameter init), and the problem module at each spec's own overrides,
    which that spec's inputs are drawn from: specs of one problem that differ only in sizes the
    model never reads (`batch_size`, mostly) share one model."""

    def __init__(self) -> None:
        self._models: dict[tuple, Any] = {}
        self._modules: dict[tuple, ProblemModule] = {}
        self.built = 0
        """Models built so far."""

    def get(self, problem: Problem, spec: InputSpec, device: str = "cuda") -> tuple[ProblemModule, Any]:
        """The problem module at `spec`'s overrides and `spec`'s reference model on `device`."""
        at = (problem.key, spec.overrides_key)
        if at not in self._modules:
            self._modules[at] = problem.load(dict(spec.shape))
        module = self._modules[at]
        key = (problem.key, spec.model_key(problem))
        if key not in self._models:
            self._models[key] = spec_model(spec, module, device)
            self.built += 1
        return module, self._models[key]

    def holds(self, problem: Problem, spec: InputSpec) -> bool:
        """Whether `spec`'s model is built already."""
        return (problem.key, spec.model_key(problem)) in self._models

    def keep(self, problem: Problem, spec: InputSpec, model: Any) -> None:
        """Hold `model`, built elsewhere for `spec` (a spare built its input ahead), for the specs that share its key."""
        self._models.setdefault((problem.key, spec.model_key(problem)), model)

    def clear(self) -> None:
        """Forget every model (e.g. its weights may have been written over)."""
        self._models.clear()
        self._modules.clear()


def run_reference(problem: Problem, spec: InputSpec, models: ModelCache,
                  device: str = "cuda") -> tuple[Any, list[Any], Any, float]:
    """Build `spec`'s inputs and run the reference on them: (model, inputs, output, wall ms).

    `models` builds each model once, so an input-major loop over specs that share a model key
    builds it once. Whatever the reference raises propagates.
    """
    module, model = models.get(problem, spec, device)
    inputs = spec_inputs(spec, module, device)
    start = time.perf_counter()
    with torch.no_grad():
        ref = model(*inputs)
    if device != "cpu":
        torch.cuda.synchronize()
    return model, inputs, ref, (time.perf_counter() - start) * 1000


def in_fp64(model: Any) -> Any:
    """A copy of the reference model with its parameters and buffers in fp64.

    `deepcopy` shares functions, so a function kept as an attribute (minGPT's `self.mlpf = lambda
    x: m.c_proj(...)` over its own submodule) would still call the fp32 original: such functions
    get their closures rebound to the copies of what they captured."""
    memo: dict[int, Any] = {}
    copied = copy.deepcopy(model, memo)
    for module in copied.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType) and value.__closure__:
                cells = tuple(types.CellType(memo.get(id(c.cell_contents), c.cell_contents)) for c in value.__closure__)
                setattr(module, name, types.FunctionType(value.__code__, value.__globals__, value.__name__,
                                                         value.__defaults__, cells))
    return copied.double()


FACTORIES = frozenset({torch.randn, torch.rand, torch.zeros, torch.ones, torch.empty, torch.full, torch.arange,
                       torch.linspace, torch.eye, torch.tensor, torch.normal})
"""Functions that make a tensor from nothing: in fp32 by default, also inside an fp64 forward."""


class _FactoriesInFp64(TorchFunctionMode):
    """Inside the fp64 forward, a tensor a factory makes in fp32 (LSTM's `h0 = torch.randn(...)`
    drawn in `forward`) comes out in fp64: the same values, drawn as the fp32 reference draws them."""

    def __torch_function__(self, func: Any, types_: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in FACTORIES and "dtype" not in kwargs and isinstance(out, torch.Tensor) and out.dtype == torch.float32:
            return out.double()
        return out


def run_fp64(model64: Any, inputs: list[Any]) -> Any:
    """The fp64 model on the inputs, floating ones promoted to fp64: the reference's exact answer."""
    with torch.no_grad(), _FactoriesInFp64():
        return model64(*[v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs])
