"""Redzones around every buffer a launcher allocates: an experiment's switch, for the mutants whose
output is right but whose kernels write outside their buffers.

Most boundary mutants no input witnesses give the correct kernel's output on every input (a
dropped guard, `<` made `<=`, a grid rounded up): equivalence candidates, as far as the output can
tell. A thread past the end that writes anyway writes past its buffer, into the caching
allocator's slack or a neighbour, which no output comparison sees and a memory checker would.
With `KBM_REDZONES=1` in `kbm run`'s environment, `Kernels.empty` and `empty_like` allocate each
buffer with `ELEMENTS` elements of a fixed byte pattern on either side, and after each mutant's
launch the cell's note says how many of the buffers it allocated had a redzone written
(`touched`). The padding moves buffers apart, which can change what a stray write reaches, so the
cells are not the pool's: run it on a copy of a store, beside the pool, and compare
(`dev/redzones.py`); it is not a protocol. The run records `"redzones": true` in its environment.
"""

from __future__ import annotations

import math
import os
from typing import Any

from kbm_toolkit.errors import OptionError

ENV = "KBM_REDZONES"
ELEMENTS = 4096
"""Elements of padding on each side: past a block of 1,024 threads' overshoot on a 1-D grid, and
a multiple of 256 bytes, so the buffer keeps the allocator's alignment for every element size."""
PATTERN = 0xA5
"""The redzones' byte; a written float, int or half with every byte 0xA5 is not a value a kernel
computes by chance."""

_zones: list[Any] = []
"""This process's buffers since the last `begin`, padded."""


def configured() -> bool:
    """Whether `KBM_REDZONES` asks for redzones; OptionError naming the variable on another value."""
    value = os.environ.get(ENV, "")
    if value not in ("", "0", "1"):
        raise OptionError(f"{ENV}={value!r}: 1 pads every buffer a launcher allocates, 0 or unset does not")
    return value == "1"


def allocate(shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
    """An uninitialised buffer of `shape` inside a padded one whose padding holds `PATTERN`."""
    import torch

    n = math.prod(shape)
    padded = torch.empty(n + 2 * ELEMENTS, dtype=dtype, device=device)
    for pad in _pads(padded):
        pad.fill_(PATTERN)
    _zones.append(padded)
    return padded[ELEMENTS:ELEMENTS + n].view(shape)


def _pads(padded: Any) -> tuple[Any, Any]:
    """A padded buffer's two redzones, as bytes."""
    import torch

    raw = padded.view(torch.uint8)
    side = ELEMENTS * padded.element_size()
    return raw[:side], raw[raw.numel() - side:]


def begin() -> None:
    """Forget the buffers allocated so far: the next launch's are the ones `touched` counts."""
    _zones.clear()


def touched() -> tuple[int, int]:
    """How many of the buffers allocated since `begin` have a byte of their redzones written, and
    how many there are (waits for the GPU); then forgets them, as `begin` does.

    The buffers are held until then, the launcher's scratch ones too (its kernels may write their
    pads after it returns); between two mutants only the correct kernel's few are."""
    import torch

    written = sum(bool((torch.cat(_pads(padded)) != PATTERN).any()) for padded in _zones)
    count = len(_zones)
    _zones.clear()
    return written, count
