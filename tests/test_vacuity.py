"""Fig. 2b, left: the blind band against reduction length, checked against torch's own allclose and softmax."""

from __future__ import annotations

import pytest
import torch

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.vacuity import crossover, normalized_rows, zeros_pass
from kbm_toolkit.store import Store, shipped_store_path


@pytest.mark.parametrize("t", [1e-2, 1e-3, 1e-4])
def test_zeros_pass_exactly_where_allclose_says(t: float) -> None:
    line = t / (1 - t)
    for largest in (line * 0.999, line * 1.001):
        ref = torch.tensor([largest, largest / 3, 0.0], dtype=torch.float64)
        assert zeros_pass(largest, t, t) == torch.allclose(torch.zeros_like(ref), ref, atol=t, rtol=t)


@pytest.mark.parametrize("t", [1e-2, 1e-3])
def test_a_torch_rand_softmax_row_passes_as_zeros_past_the_crossover(t: float) -> None:
    g = torch.Generator().manual_seed(0)
    for factor, passes in ((0.7, False), (1.4, True)):
        d = int(crossover(t, t) * factor)
        rows = torch.softmax(torch.rand(64, d, generator=g, dtype=torch.float64), dim=1)
        assert torch.allclose(torch.zeros_like(rows), rows, atol=t, rtol=t) == passes


def test_only_problems_whose_rows_sum_to_one_at_their_dim_are_points() -> None:
    store = Store(shipped_store_path("demo"), readonly=True)
    points = normalized_rows(load_matrices(store, 1e-2))
    # demo/2 is a softmax over dim = 16,384; the demo's elementwise and matmul problems are not points
    assert [(key, d) for key, d, _ in points] == [("demo/2_Softmax", 16384)]
    assert points[0][2] == pytest.approx(1.58 / 16384, rel=0.02)
