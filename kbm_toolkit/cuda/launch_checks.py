"""What every kernel launch must satisfy, checked the same way on the GPU and in dry runs."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.errors import LaunchError
from kbm_toolkit.cuda.signatures import Signature

MAX_BLOCK_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_DYNAMIC_SHMEM = 48 * 1024
"""Above 48 KiB a kernel must opt in with a function attribute, which launchers cannot set."""


def dims(value: Any) -> tuple[int, ...]:
    """A grid or block given as an int or up to three ints."""
    return (value,) if isinstance(value, int) else tuple(value)


def check_launch(sig: Signature, args: tuple, grid: Any, block: Any, shmem: int, where: str,
                 device: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Raise LaunchError unless `args` fit `sig` and the launch is within CUDA's limits.

    Tensors must be contiguous, of the parameter's dtype and on `device` (`cuda`, or `meta` in a
    dry run); scalars must be Python numbers of the right kind. Returns (grid, block) as tuples.
    """
    import torch

    name = sig.name
    if len(args) != len(sig.params):
        raise LaunchError(f"kernel {name} takes {len(sig.params)} arguments, launcher gave {len(args)}", where)
    for p, a in zip(sig.params, args):
        if p.pointer:
            if not isinstance(a, torch.Tensor):
                raise LaunchError(f"kernel {name}: {p.name} is a pointer, got {type(a).__name__}", where)
            if a.device.type != device:
                raise LaunchError(f"kernel {name}: tensor for {p.name} is on {a.device}, not {device}", where)
            if not a.is_contiguous():
                raise LaunchError(f"kernel {name}: tensor for {p.name} must be contiguous", where)
            if str(a.dtype).removeprefix("torch.") != p.dtype:
                raise LaunchError(f"kernel {name}: {p.name} expects {p.dtype}, got {a.dtype}", where)
        elif isinstance(a, torch.Tensor) or not isinstance(a, (int, float, bool)):
            raise LaunchError(f"kernel {name}: {p.name} is a scalar, got {type(a).__name__}", where)
        elif p.dtype in ("float16", "bfloat16"):
            raise LaunchError(f"kernel {name}: pass {p.name} as float, not {p.dtype}", where)
        elif p.dtype.startswith(("int", "uint")) and not isinstance(a, int):
            raise LaunchError(f"kernel {name}: {p.name} is {p.dtype}, got {type(a).__name__}", where)
        elif p.dtype == "int32" and not -2**31 <= a < 2**31:
            raise LaunchError(f"kernel {name}: {p.name}={a} overflows int32; use long long", where)
    g, b = dims(grid), dims(block)
    if not all(isinstance(v, int) for v in g + b) or len(g) > 3 or len(b) > 3:
        raise LaunchError(f"kernel {name}: grid and block must be up to three ints", where)
    threads = 1
    for v in b:
        threads *= v
    if threads > MAX_BLOCK_THREADS:
        raise LaunchError(f"kernel {name}: block of {threads} threads exceeds {MAX_BLOCK_THREADS}", where)
    if any(v > limit for v, limit in zip(g, MAX_GRID)):
        raise LaunchError(f"kernel {name}: grid {g} exceeds CUDA's limits {MAX_GRID}", where)
    if shmem > MAX_DYNAMIC_SHMEM:
        raise LaunchError(f"kernel {name}: {shmem} bytes of dynamic shared memory exceed 48 KiB", where)
    return g, b
