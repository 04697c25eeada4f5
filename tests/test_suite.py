"""Set cover, the held-out split and emitted suites, on hand-built kill matrices."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.store import Store
from kbm_toolkit.analysis.suite import budget_curve, emit_protocol, greedy_cover, half, input_kind, kill_sets, kind_prior


def test_greedy_cover_takes_the_biggest_gain_first_and_stops_when_nothing_is_left() -> None:
    kills = {"a": {1, 2}, "b": {2, 3, 4}, "c": {5}, "d": {1, 2, 3, 4}}
    assert greedy_cover(kills, {1, 2, 3, 4, 5}, 1) == ["d"]
    assert greedy_cover(kills, {1, 2, 3, 4, 5}, 5) == ["d", "c"]
    assert greedy_cover(kills, {5}, 3) == ["c"]
    assert greedy_cover({}, {1}, 2) == []


def test_ties_go_to_the_smaller_input_id() -> None:
    assert greedy_cover({"z": {1}, "y": {1}}, {1}, 1) == ["y"]


def test_ties_and_unused_budget_go_to_the_larger_prior_weight() -> None:
    kills = {"a": {"m1"}, "b": {"m1"}, "off0": set(), "off1": set()}
    prior = {"a": 0.1, "b": 0.2, "off0": 0.05, "off1": 0.3}
    assert greedy_cover(kills, {"m1"}, 3, prior) == ["b", "off1", "a"]
    assert greedy_cover(kills, set(), 2, prior) == ["off1", "b"]  # an empty dev half still gets a suite
    assert greedy_cover(kills, set(), 2) == []


def test_input_kinds_and_their_prior_pool_over_problems() -> None:
    official = '{"base": "official", "problem": "%s", "seed": %d, "shape": {}, "transforms": []}'
    probe = '{"base": "official", "problem": "%s", "seed": 1, "shape": {"n": %d}, "transforms": []}'
    assert input_kind(official % ("p", 1)) == input_kind(official % ("q", 2)) != input_kind(probe % ("p", 3))
    assert input_kind(probe % ("p", 3)) == input_kind(probe % ("q", 5))  # tiny shapes differ per problem
    kinds = {"p": {"o1": "official", "o2": "official", "t": "tiny"}, "q": {"o": "official", "t": "tiny"}}
    kills = {"p": {"o1": {1}, "o2": set(), "t": {1, 2}}, "q": {"o": set(), "t": {3, 4}}}
    universe = {"p": {1, 2}, "q": {3, 4}}
    # official: 1 of 2 + 0 of 2 + 0 of 2 killed; tiny: 2 of 2 + 2 of 2
    assert kind_prior(kills, universe, kinds) == {"official": pytest.approx(1 / 6), "tiny": 1.0}


def test_held_out_split_is_stable_and_near_even() -> None:
    ids = [f"{i:012x}" for i in range(2000)]
    halves = [half(i) for i in ids]
    assert halves == [half(i) for i in ids]
    assert 900 < halves.count("dev") < 1100


def build(tmp_path: Path, demo: ProblemSet) -> Store:
    """demo/1 with six inputs and 40 mutants: input k kills mutants whose number is = k mod 6,
    input 0 kills nothing (but is valid), input 5 rejects the correct kernel (invalid)."""
    problem = demo.get("demo/1")
    store = Store(tmp_path / "s.db")
    store.record_problem(problem)
    specs = [InputSpec.make(problem.key, 100 + k, transforms=[{"op": "scale", "by": float(k + 1)}],
                            label=f"input {k}") for k in range(6)]
    store.record_inputs(specs, "test")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for k, s in enumerate(specs):
        store.record_input_check("h", run, {"input": s.id, "valid": True, "outcome": "pass",
                                            "margin": 0.5 if k == 5 else 1e-6, "max_abs": 1e-6})
    cells = []
    for m in range(40):
        mid = f"m{m:02d}"
        store.db["mutants"].insert({"id": mid, "problem": problem.key, "substrate_hash": "h", "rule": "r",
                                    "family": "arithmetic", "status": "distinct", "name": mid})
        for k, s in enumerate(specs):
            killed = k != 0 and m % 6 == k
            cells.append({"mutant": mid, "input": s.id, "outcome": "pass", "margin": 0.9 if killed else 1e-7})
    store.record_cells(run, cells)
    return store


def test_budget_curve_and_invalid_inputs_are_never_chosen(tmp_path: Path, demo: ProblemSet) -> None:
    store = build(tmp_path, demo)
    (mx,) = load_matrices(store)
    kills = kill_sets(mx, 1e-2)
    assert len(kills) == 5  # input 5 is invalid at 1e-2
    curve = budget_curve([mx], 1e-2, [1, 2, 3, 4, 5])
    # mutants with m % 6 in {1, 2, 3, 4} are witnessed (input 5 is invalid): 7 + 7 + 7 + 6 = 27
    assert curve.witnessed == 27
    assert curve.full == pytest.approx([100 * 7 / 27, 100 * 14 / 27, 100 * 21 / 27, 100.0, 100.0])
    assert all(0 <= h <= 100 for h in curve.held_out) and curve.held_out[-1] == pytest.approx(100.0)
    invalid = [s for s, c in mx.checks.items() if c["margin"] > 1e-2]
    assert not any(i in invalid for chosen in curve.suites[5].values() for i in chosen)


def test_an_input_run_on_only_some_mutants_is_never_chosen(tmp_path: Path, demo: ProblemSet) -> None:
    store = build(tmp_path, demo)
    (mx,) = load_matrices(store)
    gappy = next(i for i, c in mx.checks.items() if c["label"] == "input 1")
    assert gappy in kill_sets(mx, 1e-2)
    # run on a protocol's survivors only: its kill set is unknown for the rest, so it cannot be compared
    store.db.execute("delete from cells where input = ? and mutant > 'm20'", [gappy])
    store.db.conn.commit()
    (mx,) = load_matrices(store)
    assert gappy not in kill_sets(mx, 1e-2) and len(kill_sets(mx, 1e-2)) == 4
    # a mutant a crash stopped leaves no gap: the run skips its other inputs on purpose
    store.db.execute("update cells set outcome = 'crash', margin = null where mutant > 'm20' and input != ?", [gappy])
    store.db.conn.commit()
    (mx,) = load_matrices(store)
    assert gappy in kill_sets(mx, 1e-2)


def test_held_out_on_other_splits(tmp_path: Path, demo: ProblemSet) -> None:
    (mx,) = load_matrices(build(tmp_path, demo))
    curve = budget_curve([mx], 1e-2, [1, 4], splits=6)
    assert [len(x) for x in curve.held_out_splits] == [6, 6]
    assert all(x == pytest.approx(100.0) for x in curve.held_out_splits[1])  # 4 inputs kill every witnessed mutant
    assert len(set(curve.held_out_splits[0])) > 1  # one input, chosen on different halves, scores differently
    assert budget_curve([mx], 1e-2, [1]).held_out_splits == []


def test_an_emitted_suite_is_a_protocol_with_the_same_inputs(tmp_path: Path, demo: ProblemSet) -> None:
    store = build(tmp_path, demo)
    (mx,) = load_matrices(store)
    suite = budget_curve([mx], 1e-2, [2]).suites[2]
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "protocol.toml").write_text(emit_protocol(suite, store, "suite-2", 1e-2))
    (protocol,) = load_protocols(folder)
    assert [s.id for s in protocol.specs(demo.get("demo/1"))] == suite["demo/1_LeakyReLU"]
    assert protocol.specs(demo.get("demo/2")) == []


def test_cli_suite_prints_the_curve_and_emits(tmp_path: Path, demo: ProblemSet) -> None:
    build(tmp_path, demo).close()
    out = tmp_path / "emitted"
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "suite", "--budget", "2",
                                      "--emit", str(out), "--baseline", "kernelbench"])
    assert result.exit_code == 0, result.output
    assert "B = 1" in result.output and "held-out" in result.output and "mean of 20" in result.output
    audited = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "-a", str(out), "--json",
                                       "--denominator", str(out)])
    assert audited.exit_code == 0, audited.output
