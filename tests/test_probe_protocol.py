"""The probe, the input `kbm run` screens every mutant on first, is the built-in protocol `probe`:
its cells are checked like any input's, so a mutant it kills has a kill witness."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.evaluation.plan import probe_spec
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.protocols.registry import all_protocols, load_protocol


def test_the_probe_protocol_is_the_input_every_run_screens_on(demo: ProblemSet) -> None:
    probe = load_protocol("probe")
    assert probe.tolerance == 1e-2 and "probe" in {p.name for p in all_protocols()}
    for problem in demo.with_substrates(level="demo"):
        [spec] = probe.specs(problem)
        assert spec.id == probe_spec(problem, substrate_for(problem)).id
    odd = demo.get("demo/1")  # its substrate declares gate shapes: the smallest is the probe's
    assert dict(probe.specs(odd)[0].shape) == substrate_for(odd).probe_shape != {}


def _audit(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["audit", "-a", "kernelbench", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_probes_kills_are_witnesses_the_official_check_misses_on_the_shipped_pool() -> None:
    with_probe = _audit()
    others = [name for name in with_probe["denominator"] if name != "probe"]
    without = _audit(*(arg for name in others for arg in ("--denominator", name)))
    added = with_probe["witnessed"] - without["witnessed"]
    # the probe's small odd shapes reach what the official sizes never run (a grid rounded down, a
    # tail dropped), so every witness it adds is a mutant the official check lets through
    assert added > 100 and with_probe["missed"] - without["missed"] == added
    assert with_probe["families"]["boundary"]["witnessed"] > without["families"]["boundary"]["witnessed"]


def test_a_list_valued_shape_override_builds_its_reference(tmp_path) -> None:
    # every such input once raised "unhashable type: 'list'" keying the model cache, and was stored
    # invalid: the probe of 11 KernelBench problems (input_shape = [37, 5] and the like)
    from kbm_toolkit.cuda.reference import run_reference
    from kbm_toolkit.problems.input_spec import InputSpec
    from kbm_toolkit.problems.problem import Problem

    path = tmp_path / "1_Scan.py"
    path.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return torch.cumsum(x, dim=1)\n\nbatch_size = 4\ninput_shape = (64,)\n\n"
                    "def get_inputs():\n    return [torch.rand(batch_size, *input_shape)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    problem = Problem("mine/1_Scan", "mine", 1, "Scan", path, "mine")
    spec = InputSpec.make(problem.key, 42, shape={"batch_size": 2, "input_shape": [37, 5]}, label="probe")
    models: dict = {}
    _, _, out, _ = run_reference(problem, spec, models, "cpu")
    assert tuple(out.shape) == (2, 37, 5) and spec.model_key in models
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
