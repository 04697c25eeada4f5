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
    # over the checkers' inputs (the targeted inputs, run on every official miss since 2026-12-05,
    # reach nearly all the probe does: 16 witnesses are the probe's alone)
    checkers = [name for name in _audit()["denominator"] if name not in ("probe", "kb-targets")]
    without = _audit(*(arg for name in checkers for arg in ("--denominator", name)))
    with_probe = _audit(*(arg for name in [*checkers, "probe"] for arg in ("--denominator", name)))
    added = with_probe["witnessed"] - without["witnessed"]
    # the probe's small odd shapes reach what the official sizes never run (a grid rounded down, a
    # tail dropped), so every witness it adds is a mutant the official check lets through
    assert added > 100 and with_probe["missed"] - without["missed"] == added
    assert with_probe["families"]["boundary"]["witnessed"] > without["families"]["boundary"]["witnessed"]


def test_a_run_of_the_probe_protocol_is_the_runs_own_probe(tmp_path, monkeypatch) -> None:
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol
    from kbm_toolkit.evaluation.options import RunOptions
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.mutation.campaign import mutate_problems
    from kbm_toolkit.mutation.rules import load_rules
    from kbm_toolkit.store import Store

    from support import REPO

    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")
    store = Store(tmp_path / "kbm.db")
    rules = [r for r in load_rules() if r.name in ("mul2div", "plus2minus")]
    mutate_problems(store, [problem], "sm_90", workers=1, require_gate=False, rules=rules)
    probe = load_protocol("probe")
    summary = run_evaluation(store, [problem], probe.specs, "probe", "sm_90", {"gpu": "fake"},
                             RunOptions(target="fake_evaluator:cell_task", rules=rules, deadline=lambda _: 1.5))
    assert summary.problems == {problem.key: "done"}
    distinct = {r["id"] for r in store.mutants(problem.key, status="distinct")}
    [spec] = probe.specs(problem)
    probed = {m for (m,) in store.db.execute("select mutant from cells where input = ?", [spec.id])}
    assert probed == distinct  # its one input is the probe every run screens on: nothing else to run
    assert run_protocol(probe, load_matrices(store)).missing_cells == {}
