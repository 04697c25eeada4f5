"""Run a substrate (or a mutant of it) on one input, on the GPU, under the no-compute guard."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.cuda.launch_guard import guard
from kbm_toolkit.cuda.nvrtc import Image
from kbm_toolkit.cuda.kernels import Kernels
from kbm_toolkit.problems.substrate import Substrate


def strict_fp32_references() -> None:
    """Run references in IEEE fp32: no TF32 in cuDNN convolutions or cuBLAS matmuls.

    PyTorch lets cuDNN use TF32 by default, which puts ~1e-3 relative noise into a convolution
    reference; a verdict at 1e-3 would then be about the reference's rounding, not the protocol.
    """
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def run_reference(problem: Any, spec: Any, models: dict[tuple, tuple[Any, Any]],
                  device: str = "cuda") -> tuple[Any, list[Any], Any, float]:
    """Build `spec`'s inputs and run the reference on them: (model, inputs, output, wall ms).

    Models are cached in `models` by the spec's model key (shape overrides and parameter init),
    so an input-major loop builds each model once. Whatever the reference raises propagates.
    """
    import time

    import torch

    if spec.model_key not in models:
        module = problem.load(dict(spec.shape))
        models[spec.model_key] = (module, spec.build_model(module, device))
    module, model = models[spec.model_key]
    inputs = spec.build(module, device)
    start = time.perf_counter()
    with torch.no_grad():
        ref = model(*inputs)
    if device != "cpu":
        torch.cuda.synchronize()
    return model, inputs, ref, (time.perf_counter() - start) * 1000


def in_fp64(model: Any) -> Any:
    """A copy of the reference model with its parameters and buffers in fp64."""
    import copy

    return copy.deepcopy(model).double()


def run_fp64(model64: Any, inputs: list[Any]) -> Any:
    """The fp64 model on the inputs, floating ones promoted to fp64: the reference's exact answer."""
    import torch

    with torch.no_grad():
        return model64(*[v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs])


class LoadedKernel:
    """A substrate's launcher bound to one compiled image of its device source."""

    def __init__(self, substrate: Substrate, image: Image, source: str | None = None,
                 launcher_source: str | None = None) -> None:
        self.substrate = substrate
        self.kernels = Kernels(image.cubin, substrate.signatures(source), str(substrate.kernel_path))
        self.launcher = (substrate.launcher if launcher_source is None
                         else substrate.launcher_from(launcher_source))

    def __call__(self, model: Any, inputs: list[Any]) -> Any:
        """The output of the launcher; raises ContractViolation if it computes with torch."""
        import torch

        with torch.no_grad(), guard(str(self.substrate.launcher_path)):
            out = self.launcher(self.kernels, model, *inputs)
        torch.cuda.synchronize()
        return out
