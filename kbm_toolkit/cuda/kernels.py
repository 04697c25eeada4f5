"""Load compiled images on the GPU and launch their kernels on torch's current stream.

The only module that touches CUDA through cuda.core; it runs in worker processes. `LoadedKernel`
is a substrate (or a mutant of it) ready to run on one input under the no-compute guard.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from kbm_toolkit.cuda import redzone
from kbm_toolkit.cuda.launch_checks import check_launch
from kbm_toolkit.cuda.launch_guard import guard
from kbm_toolkit.cuda.nvrtc import Image, compile_source
from kbm_toolkit.cuda.signatures import Signature, entry_points, kernel_signatures
from kbm_toolkit.errors import NoDevice
from kbm_toolkit.problems.substrate import Substrate


def device_arch() -> str:
    """`sm_XY` of the current CUDA device; NoDevice when there is none."""
    import torch

    if not torch.cuda.is_available():
        raise NoDevice("no CUDA device is visible")
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


@lru_cache(maxsize=None)
def own_kernels(source: str, where: str, device: int, blocks_per_sm: int) -> tuple["Kernels", int]:
    """One of kbm's own kernels (not a substrate's), compiled (cached on disk) and loaded once per
    process and device, and the grid width of `blocks_per_sm` blocks on each of its SMs."""
    import torch

    image = compile_source(source, device_arch(), where=where)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return Kernels(image.cubin, entry_points(source, where), where), sms * blocks_per_sm


class Kernels:
    """What a launcher receives: the image's kernels by name, and output allocation helpers.

    `k.relu(x, out, n, grid=..., block=...)` launches entry point `relu` with arguments typed
    from its signature. `k.empty*` allocate outputs poisoned with NaN (or a sentinel integer) so
    an element no kernel writes shows up as a mismatch rather than as stale memory.
    """

    def __init__(self, cubin: bytes, signatures: dict[str, Signature], where: str) -> None:
        import torch
        from cuda.core import Device, ObjectCode

        self._torch = torch
        self._where = where
        device = Device(torch.cuda.current_device())
        device.set_current()
        self._module = ObjectCode.from_cubin(cubin)
        self._signatures = signatures
        self._kernels: dict[str, Any] = {}
        self._preloaded = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._signatures:
            raise AttributeError(f"{self._where}: no extern \"C\" __global__ kernel named {name!r}")
        return lambda *args, grid, block, shmem=0: self.launch(name, args, grid, block, shmem)

    def preload(self) -> None:
        """Load every kernel of the image into the current context now, not at its first launch:
        under CUDA's lazy loading a first launch may wait for the whole GPU to drain, and a kernel
        running beside it until it ends (`cuda.stress`) would then never drain."""
        from cuda.bindings import driver

        if self._preloaded:  # a mutant runs on many inputs: once is enough
            return
        self._preloaded = True
        for name in self._signatures:
            if name not in self._kernels:
                self._kernels[name] = self._module.get_kernel(name)
            try:
                err, func = driver.cuKernelGetFunction(self._kernels[name].handle)
            except (TypeError, ValueError):  # a handle this binding does not take: the launch loads it
                continue
            if err == driver.CUresult.CUDA_SUCCESS:
                driver.cuFuncLoad(func)

    def launch(self, name: str, args: tuple, grid: Any, block: Any, shmem: int = 0) -> None:
        """Launch kernel `name` on torch's current stream."""
        import numpy as np
        from cuda.core import LaunchConfig, Stream, launch

        sig = self._signatures[name]
        grid, block = check_launch(sig, args, grid, block, shmem, self._where, "cuda")
        if name not in self._kernels:
            self._kernels[name] = self._module.get_kernel(name)
        typed = [np.intp(a.data_ptr()) if p.pointer else np.dtype(p.dtype).type(a)
                 for p, a in zip(sig.params, args)]
        if any(g <= 0 for g in grid) or any(b <= 0 for b in block):
            return  # an empty output launches nothing, as CUDA code would guard
        stream = Stream.from_handle(self._torch.cuda.current_stream().cuda_stream)
        launch(stream, LaunchConfig(grid=grid, block=block, shmem_size=shmem), self._kernels[name], *typed)

    # -- output allocation ------------------------------------------------------------------
    def empty(self, *shape: int, dtype: Any = None, device: Any = None) -> Any:
        """A poisoned output tensor on the current GPU (float32 unless `dtype`)."""
        torch = self._torch
        dims, dtype, device = as_shape(shape), dtype or torch.float32, device or "cuda"
        if redzone.configured():  # an experiment's switch: the buffer between two watched pads
            return self._poison(redzone.allocate(dims, dtype, device))
        return self._poison(torch.empty(dims, dtype=dtype, device=device))

    def empty_like(self, like: Any, dtype: Any = None) -> Any:
        """A poisoned output tensor shaped like `like`."""
        if redzone.configured():
            return self._poison(redzone.allocate(tuple(like.shape), dtype or like.dtype, like.device))
        return self._poison(self._torch.empty_like(like, dtype=dtype, memory_format=self._torch.contiguous_format))

    def zeros(self, *shape: int, dtype: Any = None, device: Any = None) -> Any:
        """A zeroed buffer, for kernels that accumulate into their output (atomics)."""
        torch = self._torch
        return torch.zeros(as_shape(shape), dtype=dtype or torch.float32, device=device or "cuda")

    def _poison(self, t: Any) -> Any:
        torch = self._torch
        if t.is_floating_point():
            return t.fill_(float("nan"))
        if t.dtype == torch.bool:
            return t.fill_(True)
        info = torch.iinfo(t.dtype)
        return t.fill_(info.min if info.min < 0 else info.max)

    @staticmethod
    def cdiv(a: int, b: int) -> int:
        """Ceiling division, for grid sizes (one place mutation can reach host arithmetic)."""
        return -(-int(a) // int(b))


def as_shape(shape: tuple) -> tuple[int, ...]:
    """`k.empty(2, 3)`, `k.empty((2, 3))` and `k.empty()` (a 0-dim tensor) all work."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        return tuple(int(v) for v in shape[0])
    return tuple(int(v) for v in shape)


class PlacedKernels:
    """What a placed mutant's launcher receives (`mutation.positions`): every launch runs the
    original image's kernel, except launch `NAME#K` (the K-th of kernel NAME), which runs the
    mutant's. Counting starts again with each forward (`restart`)."""

    def __init__(self, original: Any, mutated: Any, launch: str) -> None:
        self._original, self._mutated, self._launch = original, mutated, launch
        self._counts: dict[str, int] = {}

    def restart(self) -> None:
        """A new forward: count launches from the first again."""
        self._counts = {}

    def preload(self) -> None:
        """Load both images' kernels now (`Kernels.preload`)."""
        self._original.preload()
        self._mutated.preload()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._original._signatures:
            return getattr(self._original, name)  # the allocation helpers, or AttributeError naming the file
        return lambda *args, grid, block, shmem=0: self.launch(name, args, grid, block, shmem)

    def launch(self, name: str, args: tuple, grid: Any, block: Any, shmem: int = 0) -> None:
        """Launch kernel `name` from the mutant's image if this is the placed launch, else the original's."""
        count = self._counts.get(name, 0)
        self._counts[name] = count + 1
        chosen = self._mutated if f"{name}#{count}" == self._launch else self._original
        chosen.launch(name, args, grid, block, shmem)


class LoadedKernel:
    """A substrate's launcher bound to one compiled image of its device source; with `launch`
    (a placed mutant's `NAME#K`), bound to the `original` image's kernels for every other launch."""

    def __init__(self, substrate: Substrate, image: Image, source: str | None = None,
                 launcher_source: str | None = None, launch: str | None = None, original: Any = None) -> None:
        self.substrate = substrate
        self.kernels: Any = Kernels(image.cubin, kernel_signatures(substrate, source), str(substrate.kernel_path))
        if launch is not None:
            self.kernels = PlacedKernels(original, self.kernels, launch)
        self.launcher = (substrate.launcher if launcher_source is None
                         else substrate.launcher_from(launcher_source))

    def __call__(self, model: Any, inputs: list[Any]) -> Any:
        """The output of the launcher, its kernels finished; raises ContractViolation if it computes
        with torch."""
        import torch

        out = self.enqueue(model, inputs)
        torch.cuda.synchronize()
        return out

    def preload(self) -> None:
        """Load the image's kernels into the current context before the first launch needs them."""
        self.kernels.preload()

    def enqueue(self, model: Any, inputs: list[Any]) -> Any:
        """The output of the launcher, its kernels queued on torch's current stream and maybe still
        running: a CUDA error they raise comes at the next synchronisation."""
        import torch

        if isinstance(self.kernels, PlacedKernels):
            self.kernels.restart()
        with torch.no_grad(), guard(str(self.substrate.launcher_path)):
            return self.launcher(self.kernels, model, *inputs)
