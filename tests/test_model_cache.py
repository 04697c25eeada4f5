"""Reference models shared across inputs: built once per model key, which names only the
constants a model can read (`constants.model_constants`), and the seed of a parameter redraw."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbm_toolkit.cuda.reference import ModelCache, run_reference
from kbm_toolkit.problems.constants import model_constants
from kbm_toolkit.problems.input_spec import InputSpec

from support import problem_from_source

GEMM = """import torch

class Model(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)

batch_size = 8
in_features = 32
out_features = 16

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]
"""


def test_the_model_reads_what_its_class_and_init_inputs_read_not_what_only_get_inputs_reads() -> None:
    assert model_constants(GEMM) == {"in_features", "out_features"}
    # a global read in forward (the model's own code) counts
    reads_dim = GEMM.replace("return self.linear(x)", "return self.linear(x).reshape(-1, out_features)")
    assert model_constants(reads_dim.replace("return [in_features, out_features]", "return [in_features, 16]")) \
        == {"in_features", "out_features"}
    # a constant the model reads counts the constants it is computed from
    derived = GEMM.replace("out_features = 16", "out_features = 16\nshape = (batch_size, out_features)") \
        .replace("return self.linear(x)", "return self.linear(x).reshape(shape)")
    assert model_constants(derived) == {"in_features", "out_features", "shape", "batch_size"}
    # a helper get_inputs shares with the model is the model's too
    helper = GEMM.replace("def get_inputs():", "def rows():\n    return batch_size\n\ndef get_inputs():") \
        .replace("return self.linear(x)", "return self.linear(x)[:rows()]")
    assert "batch_size" in model_constants(helper)


@pytest.mark.parametrize("change", [
    ("return self.linear(x)", "return self.linear(x) * globals()['batch_size']"),
    ("return self.linear(x)", "return self.linear(x) * eval('batch_size')"),
    ("return self.linear(x)", "return self.linear(x) + get_inputs()[0].sum()"),
    ("def get_inputs():", "def get_inputs():\n    global out_features"),
])
def test_a_file_that_reads_its_names_dynamically_keeps_every_constant_in_the_key(change: tuple[str, str]) -> None:
    assert model_constants(GEMM.replace(*change)) is None


def test_inputs_that_differ_in_the_batch_alone_share_one_model_with_the_same_references(tmp_path: Path) -> None:
    problem = problem_from_source(tmp_path, "Gemm", GEMM)
    official = InputSpec.make(problem.key, 42)
    batches = [InputSpec.make(problem.key, 42, shape={"batch_size": b}) for b in (1, 3, 256)]
    wider = InputSpec.make(problem.key, 42, shape={"in_features": 7})
    shared = ModelCache()
    for spec in [official, *batches, wider]:
        _, inputs, ref, _ = run_reference(problem, spec, shared, "cpu")
        _, alone_inputs, alone, _ = run_reference(problem, spec, ModelCache(), "cpu")
        assert inputs[0].shape == alone_inputs[0].shape and torch.equal(ref, alone)  # bit for bit a fresh build's
    assert shared.built == 2  # the batches took the official input's model; in_features needs its own


def test_parameters_redrawn_under_other_seeds_are_other_models(tmp_path: Path) -> None:
    problem = problem_from_source(tmp_path, "Gemm", GEMM)
    one, two = (InputSpec.make(problem.key, seed, reinit="normal") for seed in (5, 6))
    models = ModelCache()
    first, _, _, _ = run_reference(problem, one, models, "cpu")
    second, _, _, _ = run_reference(problem, two, models, "cpu")
    assert models.built == 2 and not torch.equal(first.linear.weight, second.linear.weight)
    # the same seed's redraw with another base draw is the same model
    mixed = InputSpec.make(problem.key, 5, base="normal", params=(0.0, 1.0), reinit="normal")
    again, _, _, _ = run_reference(problem, mixed, models, "cpu")
    assert models.built == 2 and again is first


def test_a_task_that_takes_over_an_input_built_ahead_builds_no_model_for_its_next_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import functools

    import kbm_toolkit.cuda.reference as reference
    from kbm_toolkit.evaluation import cell_task as ct

    # the GPU's parts on the CPU: memory to spare, references built there
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (10, 10))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(reference, "run_reference", functools.partial(reference.run_reference, device="cpu"))
    monkeypatch.setattr(reference, "strict_fp32_references", lambda: None)
    monkeypatch.setattr(ct, "_PREPARED", {})
    problem = problem_from_source(tmp_path, "Gemm", GEMM)
    first, second = InputSpec.make(problem.key, 1), InputSpec.make(problem.key, 2, shape={"batch_size": 3})
    ct.prepare({"problem": problem.record(), "spec": first.record(), "margins": []})
    task = object.__new__(ct._CellTask)  # what `_build_once` uses of a task that has checked both before
    task.problem, task.references, task.models, task.margin_on = problem, [], ModelCache(), {}
    task.valid, task.recheck, task.settled = {first.id: 1e-7, second.id: 1e-7}, {}, None
    for spec in (first, second):
        records = task._build_once(spec)
        while True:
            try:
                next(records)
            except StopIteration as done:
                assert done.value is not None  # built, and valid as checked before
                break
    assert task.models.built == 0  # the second input's model is the one the spare built ahead


def test_a_spare_builds_the_model_its_next_input_shares_once_and_holds_no_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import functools

    import kbm_toolkit.cuda.reference as reference
    from kbm_toolkit.evaluation import cell_task as ct

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (10, 10))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 0)
    monkeypatch.setattr(reference, "run_reference", functools.partial(reference.run_reference, device="cpu"))
    monkeypatch.setattr(reference, "strict_fp32_references", lambda: None)
    monkeypatch.setattr(ct, "_PREPARED", {})
    monkeypatch.setattr(ct, "_AHEAD_MODELS", [])
    gemm = problem_from_source(tmp_path, "Gemm", GEMM)
    other = problem_from_source(tmp_path, "Other", GEMM.replace("in_features = 32", "in_features = 24"))

    def ahead(problem: object, spec: InputSpec) -> None:
        ct.prepare({"problem": problem.record(), "spec": spec.record(), "margins": []})

    models = []
    for seed, batch in ((1, 8), (2, 3), (3, 256)):  # the worker's inputs, one after another
        ahead(gemm, InputSpec.make(gemm.key, seed, shape={"batch_size": batch}))
        models += [built.model for built in ct._PREPARED.values()]
    assert len(models) == 3 and models[0] is models[1] is models[2]  # built once, for the first
    assert len(ct._PREPARED) == 1 and ct._AHEAD_MODELS[0].built == 1
    wider = InputSpec.make(gemm.key, 4, shape={"in_features": 7})  # another model: the first one goes
    ahead(gemm, wider)
    assert ct._AHEAD_MODELS[0].built == 1 and ct._AHEAD_MODELS[0].holds(gemm, wider)
    ahead(other, InputSpec.make(other.key, 1))  # the worker's next problem: likewise
    assert len(ct._AHEAD_MODELS) == 1 and ct._AHEAD_MODELS[0].holds(other, InputSpec.make(other.key, 1))
    assert not ct._AHEAD_MODELS[0].holds(gemm, wider)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 10)  # too much to hold: nothing kept
    ahead(other, InputSpec.make(other.key, 2))
    assert ct._PREPARED == {} and ct._AHEAD_MODELS == []
