from __future__ import annotations

import math

import pytest
import torch

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.tensors import spec_inputs, spec_model

from support import FIXTURES

P = "good/1_Masked"


@pytest.fixture
def masked() -> ProblemSet:
    return ProblemSet([("builtin", FIXTURES / "problems")])


def build(masked: ProblemSet, spec: InputSpec) -> list:
    return spec_inputs(spec, masked.get(P).load(dict(spec.shape)))


def test_id_is_stable_and_ignores_the_label() -> None:
    a = InputSpec.make(P, 7, transforms=[{"op": "scale", "by": -1.0}], label="negated")
    b = InputSpec.make(P, 7, transforms=[{"op": "scale", "by": -1.0}])
    assert a.id == b.id and len(a.id) == 16
    assert a.id != InputSpec.make(P, 8, transforms=[{"op": "scale", "by": -1.0}]).id


def test_record_round_trips() -> None:
    spec = InputSpec.make(P, 3, base="normal", params=(0.0, 2.0),
                          transforms=[{"op": "scale", "by": 3.0}, {"op": "spike", "dim": -1, "index": -1, "value": 9.0}],
                          shape={"batch": 5}, reinit="normal")
    assert InputSpec.from_record(spec.record()) == spec
    assert InputSpec.from_record(spec.record()).id == spec.id


@pytest.mark.parametrize("base, params", [("official", ()), ("normal", (0.0, 1.0)), ("uniform", (-2.0, 2.0)),
                                          ("loguniform", (1e-3, 1e3))])
def test_same_spec_same_tensors(masked: ProblemSet, base: str, params: tuple) -> None:
    spec = InputSpec.make(P, 11, base=base, params=params)
    for a, b in zip(build(masked, spec), build(masked, spec)):
        assert torch.equal(a, b)


def test_scale_touches_floats_only(masked: ProblemSet) -> None:
    plain = build(masked, InputSpec.make(P, 5))
    scaled = build(masked, InputSpec.make(P, 5, transforms=[{"op": "scale", "by": -1.0}]))
    assert torch.equal(scaled[0], -plain[0])
    assert torch.equal(scaled[1], plain[1]) and torch.equal(scaled[2], plain[2])


def test_redraws_keep_integers_and_have_their_distribution(masked: ProblemSet) -> None:
    official = build(masked, InputSpec.make(P, 5))
    x, mask, targets = build(masked, InputSpec.make(P, 5, base="normal", params=(0.0, 1.0)))
    assert (x < 0).any() and (x > 0).any()
    assert torch.equal(mask, official[1]) and torch.equal(targets, official[2])
    x = build(masked, InputSpec.make(P, 5, base="loguniform", params=(1e-3, 1e3), shape={"batch": 400}))[0]
    assert x.abs().min() >= 1e-3 * (1 - 1e-6) and x.abs().max() <= 1e3 * (1 + 1e-6)
    assert (x < 0).any() and (x > 0).any() and x.abs().max() > 1.0 and x.abs().min() < 1.0


def test_structured_edits(masked: ProblemSet) -> None:
    base = InputSpec.make(P, 5)
    spike = build(masked, InputSpec.make(P, 5, transforms=[{"op": "spike", "dim": -1, "index": -1, "value": 100.0}]))[0]
    assert (spike[:, -1] == 100.0).all() and torch.equal(spike[:, :-1], build(masked, base)[0][:, :-1])
    last = build(masked, InputSpec.make(P, 5, transforms=[{"op": "spike_element", "value": -7.0}]))[0]
    assert last.view(-1)[-1] == -7.0
    nan = build(masked, InputSpec.make(P, 5, transforms=[{"op": "nan_element", "index": 0}]))[0]
    assert math.isnan(nan.view(-1)[0]) and torch.isfinite(nan.view(-1)[1:]).all()
    ties = build(masked, InputSpec.make(P, 5, transforms=[{"op": "quantize", "levels": 2}]))[0]
    assert len(torch.unique(ties)) <= 3
    flat = build(masked, InputSpec.make(P, 5, transforms=[{"op": "near_constant", "eps": 1e-5}]))[0]
    assert flat.var(dim=-1).max() < 1e-9


def test_only_one_input_can_be_targeted(masked: ProblemSet) -> None:
    x, *_ = build(masked, InputSpec.make(P, 5, transforms=[{"op": "scale", "by": 2.0, "input": 1}]))
    assert torch.equal(x, build(masked, InputSpec.make(P, 5))[0])


def test_shape_override_is_applied_by_the_loaded_module(masked: ProblemSet) -> None:
    x = build(masked, InputSpec.make(P, 5, shape={"batch": 3}))[0]
    assert x.shape == (3, 8)


def test_reinit_redraws_parameters_deterministically(masked: ProblemSet) -> None:
    module = masked.get(P).load()
    default = spec_model(InputSpec.make(P, 5), module)
    a = spec_model(InputSpec.make(P, 5, reinit="normal"), module)
    b = spec_model(InputSpec.make(P, 5, reinit="normal"), module)
    assert torch.equal(a.linear.weight, b.linear.weight)
    assert not torch.equal(a.linear.weight, default.linear.weight)


@pytest.mark.parametrize("kwargs, message", [
    ({"base": "cauchy"}, "base must be one of"),
    ({"base": "normal"}, "takes 2 parameters"),
    ({"transforms": [{"op": "shift", "by": 1.0}]}, "unknown input transform 'shift'"),
    ({"transforms": [{"op": "scale", "factor": 1.0}]}, "transform 'scale' has no parameter 'factor'"),
    ({"reinit": "ones"}, "reinit must be one of"),
])
def test_bad_specs_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(KbmError, match=message):
        InputSpec.make("p", 1, **kwargs)


def test_malformed_record_names_what_is_missing() -> None:
    with pytest.raises(KbmError, match="malformed input spec .*'seed'"):
        InputSpec.from_record({"problem": "p"})
