"""Gate logic that needs no GPU: the specs it runs, and fp64 adjudication of a miss."""

from __future__ import annotations

import torch

from kbm_toolkit.evaluation.gate import gate_specs
from kbm_toolkit.evaluation.gate_task import fp64_adjudication, unrefereeable
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.problems.substrate import substrate_for


class Sum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1)


def test_gate_runs_the_official_trials_then_harder_inputs(demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    specs = gate_specs(problem, substrate_for(problem))
    assert [s.seed for s in specs[:5]] == trial_seeds(5)
    assert all(s.base == "official" and not s.transforms for s in specs[:5])
    labels = [s.label for s in specs[5:]]
    assert labels[:3] == ["official x -1", "official x 3", "normal(0, 1)"]
    assert any(s.shape for s in specs[8:])  # the substrate's odd shapes
    assert len({s.id for s in specs}) == len(specs)


def test_a_substrate_that_is_wrong_stays_wrong() -> None:
    x = torch.randn(8, 64)
    ref = Sum()(x)
    assert fp64_adjudication(Sum(), [x], ref, ref + 0.5, 1e-3)[0] == "value"


def test_a_substrate_closer_to_fp64_than_the_reference_passes() -> None:
    x = torch.tensor([[1e8, 1.0, -1e8, 1.0]])
    ref = Sum()(x)  # fp32 loses both ones: 0
    exact = torch.tensor([2.0])
    outcome, note = fp64_adjudication(Sum(), [x], ref, exact, 1e-3)
    assert outcome == "fp64-pass" and "fp32 reference" in note


def test_an_input_past_the_validity_ceiling_is_not_the_substrate_s_fault() -> None:
    x = torch.tensor([[1e8, 1.0, -1e8, 1.0]])
    ref = Sum()(x)
    outcome, _ = fp64_adjudication(Sum(), [x], ref, torch.tensor([1.0]), 1e-3)  # off, but less than ref
    assert outcome == "ceiling"


class Cancelling(torch.nn.Module):
    """x + 90 in fp64; in fp32 the 90 is lost to cancellation against 1e8, so the reference is x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + (x * 1e8 + 1 - x * 1e8) * 90


def test_a_reference_with_no_correct_digit_judges_no_substrate() -> None:
    x = torch.tensor([10.0])
    ref = Cancelling()(x)  # 10 where fp64 says 100: a margin of 90 / 11, past 1
    far = torch.tensor([1.0])  # 99 / 2 from fp64: more than twice the reference's miss
    assert fp64_adjudication(Cancelling(), [x], ref, far, 1e-3)[0] == "ceiling"
    # where the reference keeps a digit, a substrate more than twice as far off is still wrong
    x = torch.tensor([[1e8, 1.0, -1e8, 1.0]])
    assert fp64_adjudication(Sum(), [x], Sum()(x), torch.tensor([-4.0]), 1e-3)[0] == "value"


def test_a_random_reference_is_unrefereeable() -> None:
    torch.manual_seed(0)
    drop = torch.nn.Dropout(0.2)  # training mode, as KernelBench leaves it
    x = torch.rand(64, 64)
    assert "random reference" in unrefereeable([drop(x)], drop(x), 1e-3)


def test_a_constant_reference_is_unrefereeable_and_a_varying_one_is_not() -> None:
    zeros = [torch.zeros(4, 3) for _ in range(5)]
    assert unrefereeable(zeros, None, 1e-3) == "constant reference: every official output is 0"
    varying = [torch.rand(4, 3) for _ in range(5)]
    assert unrefereeable(varying, None, 1e-3) == "" and unrefereeable(varying, varying[0].clone(), 1e-3) == ""


def test_store_marks_unrefereeable_problems(fresh_store, demo: ProblemSet) -> None:
    from kbm_toolkit.evaluation.gate import GateResult

    problem = demo.get("demo/1")
    fresh_store.record_problem(problem)
    fresh_store.record_gate(fresh_store.start_run("gate", {}),
                            GateResult(problem.key, "unrefereeable", 1e-3, message="constant reference: 0"))
    row = fresh_store.db["problems"].get(problem.key)
    assert row["refereeable"] == 0 and row["reason"] == "constant reference: 0"


def test_run_reference_builds_each_model_once(demo: ProblemSet) -> None:
    from kbm_toolkit.cuda.reference import ModelCache, run_reference

    problem = demo.get("demo/1")
    specs = gate_specs(problem, substrate_for(problem))
    models = ModelCache()
    model, inputs, ref, ms = run_reference(problem, specs[0], models, "cpu")
    assert torch.equal(ref, model(*inputs)) and ms >= 0
    run_reference(problem, specs[1], models, "cpu")
    assert models.built == 1  # two official trials share one model
    odd = next(s for s in specs if s.shape)
    assert problem.model_constants() == frozenset()  # its sizes shape only the inputs
    _, inputs, _, _ = run_reference(problem, odd, models, "cpu")
    assert models.built == 1 and inputs[0].shape == (3, 1001)
