"""Enforce the substrate contract: a launcher allocates and launches, it never computes with torch."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.errors import ContractViolation

ALLOWED_OPS = frozenset({
    # allocation and initialisation
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "new_zeros", "fill_", "zero_", "lift_fresh",
    # views and layout: no new values
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t",
    "unsqueeze", "squeeze", "select", "slice", "detach", "alias", "split", "unbind",
    "flatten", "unflatten", "contiguous", "clone", "copy_", "_to_copy", "_local_scalar_dense",
    "resolve_conj", "resolve_neg",
})
"""aten op names a launcher may issue; anything else computes values torch-side."""


def guard(where: str) -> Any:
    """A TorchDispatchMode that raises ContractViolation on any op outside ALLOWED_OPS."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class NoTorchCompute(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch wraps a mode's __torch_dispatch__ to keep torch.compile out of it, importing
            # torch._dynamo on first use: 4-5 s of each worker's ~10 s start on the H200 host.
            # A launcher never compiles (the guard would refuse what compiling runs anyway).
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if name not in ALLOWED_OPS or (name == "_to_copy" and _changes_dtype(args, kwargs)):
                raise ContractViolation(
                    f"launcher computed with torch ({func}); every output value must come from "
                    "a kernel in kernel.cu", where)
            return func(*args, **kwargs)

    return NoTorchCompute()


def _changes_dtype(args: tuple, kwargs: dict) -> bool:
    dtype = kwargs.get("dtype")
    return dtype is not None and args and dtype != args[0].dtype
