from __future__ import annotations

import math

import pytest
import torch

from kbm_toolkit.cuda.comparison import compare
from kbm_toolkit.vocabulary import Outcome


@pytest.mark.parametrize("seed", range(20))
def test_margin_decides_allclose_at_every_tolerance(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    ref = torch.randn(200, generator=g) * 10 ** (seed % 5 - 2)
    out = ref + torch.randn(200, generator=g) * 10 ** (-(seed % 4) - 1)
    cmp = compare(ref, out)
    for t in (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0):
        assert cmp.passes(t) == torch.allclose(ref, out, atol=t, rtol=t), t


def test_rtol_scales_with_the_candidate_not_the_reference() -> None:
    # |1 - 3| = 2 <= 0.5 * (1 + 3): allclose(ref, out) passes; swapped it would not.
    ref, out = torch.tensor([1.0]), torch.tensor([3.0])
    assert compare(ref, out).margin == pytest.approx(0.5)
    assert compare(ref, out).passes(0.5) and torch.allclose(ref, out, atol=0.5, rtol=0.5)
    assert not torch.allclose(out, ref, atol=0.5, rtol=0.5)


def test_max_abs_is_reported_for_absolute_tolerances() -> None:
    cmp = compare(torch.tensor([0.0, 1.0]), torch.tensor([0.25, 1.0]))
    assert cmp.max_abs == pytest.approx(0.25) and cmp.margin == pytest.approx(0.2)


@pytest.mark.parametrize("ref, out, outcome", [
    ([1.0, float("nan")], [1.0, float("nan")], Outcome.NONFINITE),    # NaN never matches
    ([1.0, 2.0], [1.0, float("nan")], Outcome.NONFINITE),             # candidate NaN
    ([float("inf"), 1.0], [1.0, 1.0], Outcome.NONFINITE),             # inf on one side only
    ([float("inf"), 1.0], [float("-inf"), 1.0], Outcome.NONFINITE),   # opposite infinities
    ([float("inf"), 1.0], [float("inf"), 1.0], Outcome.PASS),         # equal infinities are close
])
def test_nonfinite_values(ref: list, out: list, outcome: Outcome) -> None:
    cmp = compare(torch.tensor(ref), torch.tensor(out))
    assert cmp.outcome is outcome
    assert torch.allclose(torch.tensor(ref), torch.tensor(out)) == (outcome is Outcome.PASS)


def test_shape_mismatch_and_non_tensor_are_shape_outcomes() -> None:
    assert compare(torch.zeros(3), torch.zeros(4)).outcome is Outcome.SHAPE
    assert compare(torch.zeros(3), None).outcome is Outcome.SHAPE
    assert math.isinf(compare(torch.zeros(3), None).margin)


def test_integer_outputs_compare_exactly() -> None:
    assert compare(torch.tensor([3, 4]), torch.tensor([3, 4])).margin == 0.0
    assert compare(torch.tensor([3, 4]), torch.tensor([3, 5])).margin == pytest.approx(1 / 6)


def test_judged_turns_a_pass_into_a_value_failure() -> None:
    cmp = compare(torch.tensor([1.0]), torch.tensor([1.1]))
    assert cmp.judged(1e-1).outcome is Outcome.PASS
    assert cmp.judged(1e-3).outcome is Outcome.VALUE
