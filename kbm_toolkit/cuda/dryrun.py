"""Check a substrate without a GPU: run its launcher on meta tensors against its kernels' signatures.

Every launch is checked for argument count and types, tensor dtypes and contiguity, and launch
dimensions within CUDA's limits; the launcher runs under the no-torch-compute guard; the output's
shape and dtype are compared with the reference's, computed on the meta device. CI runs this for
every shipped substrate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from kbm_toolkit.cuda.kernels import as_shape
from kbm_toolkit.cuda.launch_checks import check_launch
from kbm_toolkit.cuda.launch_guard import guard
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.cuda.signatures import Signature, kernel_signatures
from kbm_toolkit.errors import SubstrateError, one_line
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import Substrate, substrate_for
from kbm_toolkit.problems.tensors import init_inputs


@dataclass
class Launch:
    """One launch a launcher asked for."""

    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    shmem: int
    scalars: tuple[tuple[str, str, Any], ...] = ()
    """(parameter, dtype, value) of each scalar argument, in parameter order."""
    tensors: tuple[tuple[Any, ...], ...] = ()
    """(which tensor: its first place among the launches' tensors, shape, strides, offset, dtype) of
    each pointer argument: what tells two launches' buffers apart on meta tensors."""


@dataclass
class DryRun:
    """What a launcher did with one input."""

    launches: list[Launch] = field(default_factory=list)
    output_shape: tuple[int, ...] = ()
    reference_shape: tuple[int, ...] | None = None
    """None when the reference cannot run on meta tensors; then only the launcher is checked."""


class RecordingKernels:
    """Stands in for `kernels.Kernels`: validates every launch against the signatures, runs nothing."""

    def __init__(self, signatures: dict[str, Signature], where: str) -> None:
        self._torch = torch
        self._signatures = signatures
        self._where = where
        self.launches: list[Launch] = []
        self._seen: dict[int, int] = {}
        self._held: list[Any] = []  # keeps recorded tensors alive, so no id() is reused

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._signatures:
            raise AttributeError(f"{self._where}: no extern \"C\" __global__ kernel named {name!r}")
        return lambda *args, grid, block, shmem=0: self.launch(name, args, grid, block, shmem)

    def launch(self, name: str, args: tuple, grid: Any, block: Any, shmem: int = 0) -> None:
        signature = self._signatures[name]
        g, b = check_launch(signature, args, grid, block, shmem, self._where, "meta")
        scalars = tuple((p.name, p.dtype, a) for p, a in zip(signature.params, args) if not p.pointer)
        tensors = tuple(self._describe(a) for p, a in zip(signature.params, args) if p.pointer)
        self.launches.append(Launch(name, g, b, int(shmem), scalars, tensors))

    def _describe(self, t: Any) -> tuple[Any, ...]:
        base = t._base if t._base is not None else t
        if id(base) not in self._seen:
            self._seen[id(base)] = len(self._seen)
            self._held.append(base)
        return (self._seen[id(base)], tuple(t.shape), t.stride(), t.storage_offset(), str(t.dtype))

    def empty(self, *shape: int, dtype: Any = None, device: Any = None) -> Any:
        return self._torch.empty(as_shape(shape), dtype=dtype or self._torch.float32, device="meta")

    def empty_like(self, like: Any, dtype: Any = None) -> Any:
        return self._torch.empty_like(like, dtype=dtype, memory_format=self._torch.contiguous_format)

    def zeros(self, *shape: int, dtype: Any = None, device: Any = None) -> Any:
        return self._torch.zeros(as_shape(shape), dtype=dtype or self._torch.float32, device="meta")

    cdiv = staticmethod(lambda a, b: -(-int(a) // int(b)))


def meta_case(problem: Problem, overrides: dict[str, Any] | None = None) -> tuple[Any, list[Any]]:
    """The problem's model and its official inputs, on meta tensors, under module-constant `overrides`."""
    module = problem.load(overrides)
    with torch.device("meta"):
        init = init_inputs(module)
        try:
            with torch.no_grad():
                model = module.Model(*init)
        except Exception:  # a constructor that reads values (Swin's `linspace(...).item()`): build it on the CPU
            model = None
        inputs = list(module.namespace["get_inputs"]())
    if model is None:
        with torch.no_grad():
            model = module.Model(*init_inputs(module)).to("meta")
    return model, [v.to("meta") if isinstance(v, torch.Tensor) else v for v in inputs]


def record_launches(substrate: Substrate, model: Any, inputs: list[Any], kernel_source: str | None = None,
                    launcher_source: str | None = None) -> tuple[list[Launch], Any]:
    """Run the substrate's launcher (or `launcher_source`, a mutant's) on meta tensors against the
    signatures of its kernels (or of `kernel_source`); the launches it asked for and its output."""
    kernels = RecordingKernels(kernel_signatures(substrate, kernel_source), str(substrate.kernel_path))
    launcher = substrate.launcher if launcher_source is None else substrate.launcher_from(launcher_source)
    with torch.no_grad(), guard(str(substrate.launcher_path)):
        out = launcher(kernels, model, *inputs)
    return kernels.launches, out


def dry_run(problem: Problem, substrate: Substrate, overrides: dict[str, Any] | None = None) -> DryRun:
    """Run `substrate`'s launcher on meta tensors shaped like the problem's inputs."""
    model, inputs = meta_case(problem, overrides)
    result = DryRun()
    try:
        with torch.no_grad():
            ref = model(*inputs)
        result.reference_shape = tuple(ref.shape)
    except Exception:  # some references cannot run on meta; then only the launcher is checked
        ref = None
    result.launches, out = record_launches(substrate, model, inputs)
    if not isinstance(out, torch.Tensor):
        raise SubstrateError(f"launcher returned {type(out).__name__}, not a tensor", substrate.launcher_path)
    result.output_shape = tuple(out.shape)
    if not result.launches:
        raise SubstrateError("launcher launched no kernel", substrate.launcher_path)
    if ref is not None and (out.shape != ref.shape or out.dtype != ref.dtype):
        raise SubstrateError(f"output is {tuple(out.shape)} {out.dtype}, reference is "
                             f"{tuple(ref.shape)} {ref.dtype}", substrate.launcher_path)
    return result


@dataclass
class StaticCheck:
    """`kbm check` on one substrate: its image and the launches of every dry run, or why it fails."""

    problem: str
    image_hash: str | None = None
    shapes: int = 0
    launches: int = 0
    error: str = ""


def check_substrate(problem: Problem, arch: str) -> StaticCheck:
    """Compile a problem's substrate with NVRTC and dry-run its launcher at the default shape and at
    every shape its `substrate.toml` declares; whatever breaks is the result's `error`."""
    result = StaticCheck(problem.key)
    try:
        substrate = substrate_for(problem)
        result.image_hash = compile_source(substrate.source, arch, where=str(substrate.kernel_path)).image_hash
        shapes = [None, *substrate.gate_shapes]
        result.shapes = len(shapes)
        result.launches = sum(len(dry_run(problem, substrate, shape).launches) for shape in shapes)
    except Exception as e:  # report every substrate, whatever breaks in one
        result.error = one_line(e)
    return result
