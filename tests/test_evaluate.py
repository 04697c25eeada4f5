"""The GPU worker's pure helpers, on the CPU."""

from __future__ import annotations

import pytest
import torch

from kbm_toolkit.evaluation.cell_task import unchanged


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64])
def test_an_input_is_unchanged_until_a_bit_of_it_changes(dtype: torch.dtype) -> None:
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4).to(dtype)
    if dtype.is_floating_point:
        x[2, 3] = float("nan")  # the targeted NaN inputs: torch.equal calls such a tensor changed
    saved = x.clone()
    assert unchanged(x, saved)
    x[0, 0] = -1
    assert not unchanged(x, saved)


def test_a_sign_flip_of_zero_is_a_change() -> None:
    x = torch.zeros(4)
    saved = x.clone()
    x[1] = -0.0  # equal as numbers, but a mutant wrote it
    assert not unchanged(x, saved)
