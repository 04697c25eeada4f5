from __future__ import annotations

import pytest
import torch

from kbm_toolkit.errors import KbmError
from kbm_toolkit.inputs import InputSpec
from kbm_toolkit.problems import ProblemSet

from conftest import FIXTURES


@pytest.fixture
def masked() -> ProblemSet:
    return ProblemSet([("builtin", FIXTURES / "problems")])


def test_id_is_stable_and_ignores_the_label() -> None:
    a = InputSpec("demo/1_LeakyReLU", 7, transforms=(("scale", -1.0),), label="negated")
    b = InputSpec("demo/1_LeakyReLU", 7, transforms=(("scale", -1.0),))
    assert a.id == b.id and len(a.id) == 16
    assert a.id != InputSpec("demo/1_LeakyReLU", 8, transforms=(("scale", -1.0),)).id


def test_record_round_trips() -> None:
    spec = InputSpec("p", 3, base="normal", params=(0.0, 2.0), transforms=(("scale", 3.0),), shape=(("dim", 5),))
    assert InputSpec.from_record(spec.record()) == spec


def test_same_spec_same_tensors(masked: ProblemSet) -> None:
    spec = InputSpec("good/1_Masked", 11, base="normal", params=(0.0, 1.0))
    module = masked.get("good/1").load()
    first, second = spec.build(module), spec.build(module)
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def test_scale_touches_floats_only(masked: ProblemSet) -> None:
    module = masked.get("good/1").load()
    plain = InputSpec("good/1_Masked", 5).build(module)
    scaled = InputSpec("good/1_Masked", 5, transforms=(("scale", -1.0),)).build(module)
    assert torch.equal(scaled[0], -plain[0])
    assert torch.equal(scaled[1], plain[1]) and torch.equal(scaled[2], plain[2])


def test_normal_redraw_is_sign_mixed_and_keeps_integers(masked: ProblemSet) -> None:
    module = masked.get("good/1").load()
    x, mask, targets = InputSpec("good/1_Masked", 5, base="normal", params=(0.0, 1.0)).build(module)
    official = InputSpec("good/1_Masked", 5).build(module)
    assert (x < 0).any() and (x > 0).any()
    assert torch.equal(mask, official[1]) and torch.equal(targets, official[2])


def test_shape_override_is_applied_by_the_loaded_module(masked: ProblemSet) -> None:
    spec = InputSpec("good/1_Masked", 5, shape=(("batch", 3),))
    x = spec.build(masked.get("good/1").load(dict(spec.shape)))[0]
    assert x.shape == (3, 8)


@pytest.mark.parametrize("kwargs, message", [
    ({"base": "cauchy"}, "base must be one of"),
    ({"transforms": (("shift", 1.0),)}, "unknown input transform 'shift'"),
])
def test_bad_specs_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(KbmError, match=message):
        InputSpec("p", 1, **kwargs)
