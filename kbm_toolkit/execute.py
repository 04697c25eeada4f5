"""Run a substrate (or a mutant of it) on one input, on the GPU, under the no-compute guard."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.launch_guard import guard
from kbm_toolkit.nvrtc import Image
from kbm_toolkit.runtime import Kernels
from kbm_toolkit.substrates import Substrate


class LoadedKernel:
    """A substrate's launcher bound to one compiled image of its device source."""

    def __init__(self, substrate: Substrate, image: Image, source: str | None = None) -> None:
        self.substrate = substrate
        self.kernels = Kernels(image.cubin, substrate.signatures(source), str(substrate.kernel_path))

    def __call__(self, model: Any, inputs: list[Any]) -> Any:
        """The output of the launcher; raises ContractViolation if it computes with torch."""
        import torch

        with torch.no_grad(), guard(str(self.substrate.launcher_path)):
            out = self.substrate.launcher(self.kernels, model, *inputs)
        torch.cuda.synchronize()
        return out
