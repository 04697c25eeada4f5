"""Inputs whose reference raised: a list-valued size once raised in every reference kbm built
(`TypeError: unhashable type: 'list'` keying the model cache), and each such input was stored as
testing nothing, in the gate, the probe and the targeted inputs alike. Now it builds, a run checks
such an input again, and the gate's table says why it skipped any."""

from __future__ import annotations

from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.registry import load_protocol

from support import problem_from_source


def test_a_list_valued_shape_override_builds_its_reference(tmp_path) -> None:
    # every such input once raised "unhashable type: 'list'" keying the model cache, and was stored
    # invalid: the probe of 11 KernelBench problems (input_shape = [37, 5] and the like)
    from kbm_toolkit.cuda.reference import ModelCache, run_reference
    from kbm_toolkit.problems.input_spec import InputSpec

    problem = problem_from_source(tmp_path, "Scan", "import torch\n\nclass Model(torch.nn.Module):\n"
                                  "    def forward(self, x):\n        return torch.cumsum(x, dim=1)\n\n"
                                  "batch_size = 4\ninput_shape = (64,)\n\ndef get_inputs():\n"
                                  "    return [torch.rand(batch_size, *input_shape)]\n\n"
                                  "def get_init_inputs():\n    return []\n")
    spec = InputSpec.make(problem.key, 42, shape={"batch_size": 2, "input_shape": [37, 5]}, label="probe")
    models = ModelCache()
    _, _, out, _ = run_reference(problem, spec, models, "cpu")
    assert tuple(out.shape) == (2, 37, 5) and models.built == 1
    assert spec.record()["shape"] == {"batch_size": 2, "input_shape": [37, 5]}  # the id is the stored one


def test_a_run_checks_an_input_whose_reference_raised_again(tmp_path, demo: ProblemSet) -> None:
    from kbm_toolkit.evaluation.plan import stored_progress
    from kbm_toolkit.store import Store

    problem = demo.get("demo/1")
    store = Store(tmp_path / "kbm.db")
    store.record_problem(problem)
    store.db["mutants"].insert({"id": "A", "problem": problem.key, "substrate_hash": "h", "rule": "r",
                                "family": "boundary", "status": "distinct", "name": "A"})
    probe = load_protocol("probe").specs(problem)[0]
    other = load_protocol("kernelbench").specs(problem)[0]
    store.record_inputs([probe, other], "kernelbench")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    store.record_input_check("h", run, {"input": probe.id, "valid": False,
                                        "note": "reference raised TypeError: unhashable type: 'list'"})
    store.record_input_check("h", run, {"input": other.id, "valid": False,
                                        "note": "reference is non-finite on this input"})
    progress = stored_progress(store, problem, "h", {"A": {}}, [other], probe)
    assert probe.id not in progress.checked and ("A", probe.id) not in progress.done  # checked again
    assert progress.checked[other.id] is None and ("A", other.id) in progress.done  # a real verdict stays


def test_the_gate_table_says_why_it_skipped_inputs(capsys, monkeypatch) -> None:
    from kbm_toolkit.evaluation.gate import GateResult, GateRow
    from kbm_toolkit.report.gate import _skipped_why, print_gate_results

    unhashable = "reference raised TypeError: unhashable type: 'list'"
    rows = [GateRow("official trial 0", {}, "a", "pass", margin=1e-7),
            GateRow("shape input_shape=[37, 5]", {}, "b", "skipped", note=unhashable),
            GateRow("shape input_shape=[1001]", {}, "c", "skipped", note=unhashable)]
    assert _skipped_why(rows) == f"skipped 2: {unhashable}"
    other = GateRow("shape dim=1", {}, "d", "skipped", note="reference is non-finite on this input")
    assert _skipped_why([*rows, other]) == f"skipped 2: {unhashable} (and 1 more)"
    assert _skipped_why(rows[:1]) == ""
    monkeypatch.setenv("COLUMNS", "220")  # one line a row: the note unwrapped
    print_gate_results([GateResult("level1/89_cumsum", "passed", 1e-3, 1e-7, rows)], {"gpu": "H200", "arch": "sm_90"})
    assert f"1/1 (+2 skipped) │ skipped 2: {unhashable}" in capsys.readouterr().out
