"""Scoring on a hand-built kill matrix whose answers are known."""

from __future__ import annotations

import pytest

from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.score import audit, bootstrap_band, run_protocol
from kbm_toolkit.store import Store
from kbm_toolkit.vocabulary import Accounting

from support import seed

UNION = Accounting.UNION

KB, KBV = load_protocol("kernelbench"), load_protocol("kbv")


class Row:
    """A stand-in for a screened mutant record."""

    def __init__(self, mid: str, family: str, rule: str) -> None:
        self.id, self.family, self.rule = mid, family, rule


@pytest.fixture
def matrices(demo: ProblemSet) -> list:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    return load_matrices(store)


def test_detection_false_rejections_and_drops(matrices: list) -> None:
    kb, kbv = run_protocol(KB, matrices), run_protocol(KBV, matrices)
    assert kb.detected["demo/1_LeakyReLU"] == {"A"}
    assert kbv.detected["demo/1_LeakyReLU"] == {"A", "B", "C"}
    assert [f["label"] for f in kbv.false_rejections] == ["hidden x3"] and kbv.dropped == 1
    assert kb.false_rejections == [] and not kb.missing_cells and not kb.missing_checks


def test_audit_scores_against_the_witnessed_denominator(matrices: list) -> None:
    report = audit(KB, matrices, [KB, KBV], accounting=UNION)
    assert (report["witnessed"], report["detected"], report["missed"]) == (3, 1, 2)
    assert report["detection_pct"] == pytest.approx(100 / 3)
    assert report["families"]["precision"] == {"witnessed": 1, "missed": 1, "missed_pct": 100.0, "rules": 1}
    assert "boundary" not in report["families"]  # D is unwitnessed


def test_witnesses_count_at_the_scored_protocols_tolerance(matrices: list) -> None:
    # B is off by 5e-3 wherever it is seen: no witness against a check at 1e-2, which misses only C then
    report = audit(KB, matrices, [KB, KBV])
    assert (report["witnessed"], report["detected"], report["missed"]) == (2, 1, 1)
    assert report["accounting"] == "tolerance" and "precision" not in report["families"]
    assert report["denominator_words"] == ("2 mutants witnessed at 0.01 by any of kbv, kernelbench "
                                           "(the paper's accounting)")
    # at KBV's 1e-3 the official inputs witness B themselves: a survivor of KB with KB alone as denominator
    assert audit(KBV, matrices, [KB], vs=KB)["vs"]["survivors"] == 1
    assert audit(KBV, matrices, [KB], vs=KB, accounting=UNION)["vs"]["survivors"] == 0
    assert audit(KB, matrices, [KB, KBV], accounting=UNION)["denominator_words"] == (
        "3 mutants witnessed by any of kbv, kernelbench, each at its own tolerance (the union accounting)")


def test_the_gain_splits_into_inputs_and_tolerance(matrices: list) -> None:
    vs = audit(KBV, matrices, [KB, KBV], vs=KB)["vs"]
    assert vs["gain_points"] == pytest.approx(200 / 3)
    assert vs["inputs_points"] == pytest.approx(100 / 3)      # C: reached only by a hidden input
    assert vs["tolerance_points"] == pytest.approx(100 / 3)   # B: seen only at 1e-3


def test_a_reference_apart_is_its_own_part_of_the_split(demo: ProblemSet) -> None:
    import json
    from dataclasses import replace

    from kbm_toolkit.judging import PYTORCH_DEFAULT, STRICT, margin_key

    store = Store(":memory:")
    official = {i for label, i in seed(store, demo.get("demo/1")).items() if label.startswith("official")}
    # against the benchmark's TF32 reference B misses by 2e-2 on the official inputs: KB sees it there
    tf32 = json.dumps({margin_key(PYTORCH_DEFAULT, "output", 1.0): 2e-2})
    with store.db.conn:
        store.db.execute(f"update cells set margins = ? where mutant = 'B' and input in ({','.join('?' * len(official))})",
                         [tf32, *official])
    strict_kbv = replace(KBV, judging=KBV.judge.with_reference(STRICT))
    vs = audit(strict_kbv, load_matrices(store), [KB, KBV], vs=KB)["vs"]
    assert vs["detection_pct"] == pytest.approx(200 / 3)      # A, and B through the TF32 reference
    assert vs["inputs_points"] == pytest.approx(100 / 3)      # C: reached only by a hidden input
    assert vs["reference_points"] == pytest.approx(-100 / 3)  # B: in strict fp32, 5e-3 passes at 1e-2 ...
    assert vs["tolerance_points"] == pytest.approx(100 / 3)   # ... and fails at 1e-3
    assert audit(KBV, load_matrices(store), [KB, KBV], vs=KB)["vs"]["reference_points"] is None  # both TF32


def test_the_ladder_counts_the_survivors_of_the_other_protocol_this_one_kills(matrices: list) -> None:
    vs = audit(KBV, matrices, [KB, KBV], vs=KB)["vs"]
    assert (vs["survivors"], vs["survivors_killed"]) == (2, 2)  # B and C, which the official check lets through
    back = audit(KB, matrices, [KB, KBV], vs=KBV)["vs"]
    assert (back["survivors"], back["survivors_killed"], back["survivors_killed_pct"]) == (0, 0, None)


def test_outside_the_denominator_a_protocol_makes_no_survivors_of_its_own(matrices: list) -> None:
    # KBV cannot make survivors of B and C, which only it witnesses
    outside = audit(KBV, matrices, [KB], vs=KB, accounting=UNION)["vs"]
    assert (outside["survivors"], outside["survivors_killed"]) == (0, 0)


def test_where_the_other_protocol_cannot_referee_it_has_no_survivors(matrices: list) -> None:
    unrefereed = audit(KBV, matrices, [KB, KBV], vs=KB, vs_excluded={"demo/1_LeakyReLU": "vacuous"})["vs"]
    assert (unrefereed["survivors"], unrefereed["survivors_killed"]) == (0, 0)


def test_rescoring_at_another_tolerance_keeps_the_denominator(matrices: list) -> None:
    tight = audit(KB, matrices, [KB, KBV], tolerance=1e-3, accounting=UNION)
    assert tight["witnessed"] == 3 and tight["detected"] == 2 and tight["tolerance"] == 1e-3
    # witnesses count at the protocol's own 1e-2, not at the override: B, which 1e-3 detects, is none
    tight = audit(KB, matrices, [KB, KBV], tolerance=1e-3)
    assert tight["witnessed"] == 2 and tight["detected"] == 1


def test_missing_cells_are_listed(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    store.db.execute("delete from cells where mutant = 'A'")
    store.db.conn.commit()
    result = run_protocol(KB, load_matrices(store))
    assert result.missing_cells == {"demo/1_LeakyReLU": 5}


@pytest.mark.parametrize("floor", [None, 1e-4])
def test_a_mutant_stopped_by_a_crash_lacks_cells_only_where_they_matter(demo: ProblemSet, floor: float | None) -> None:
    store = Store(":memory:")
    ids = seed(store, demo.get("demo/1"))
    # D crashed on official trial 1; the run then left it out of every later input
    store.db.execute("delete from cells where mutant = 'D' and input not in (?, ?)",
                     [ids["official trial 0"], ids["official trial 1"]])
    store.db.execute("update cells set outcome = 'crash', margin = null where mutant = 'D' and input = ?",
                     [ids["official trial 1"]])
    store.db.conn.commit()
    matrices = load_matrices(store, floor)
    official = run_protocol(KB, matrices)
    assert "D" in official.detected["demo/1_LeakyReLU"] and not official.missing_cells
    store.db.execute("delete from cells where mutant = 'D' and input = ?", [ids["official trial 1"]])
    store.db.execute("update cells set outcome = 'crash', margin = null where mutant = 'D' and input = ?",
                     [ids["official trial 0"]])
    store.db.execute("insert into cells (mutant, input, outcome, margin) values ('D', ?, 'pass', 1e-6)",
                     [ids["official trial 1"]])
    store.db.conn.commit()  # crashed on trial 0: trials 2-4 and the hidden inputs need no cells either
    assert not run_protocol(KBV, load_matrices(store, floor)).missing_cells


def test_survivors_are_the_scored_mutants_a_protocol_misses(demo: ProblemSet) -> None:
    from kbm_toolkit.analysis.score import survivors

    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    assert survivors(store, KB) == {"demo/1_LeakyReLU": {"B", "C", "D"}}
    assert survivors(store, KBV) == {"demo/1_LeakyReLU": {"D"}}
    # the ladder's survivors: D is witnessed by neither protocol, so it is no survivor of either
    assert survivors(store, KB, [KB, KBV], UNION) == {"demo/1_LeakyReLU": {"B", "C"}}
    assert survivors(store, KB, [KB, KBV]) == {"demo/1_LeakyReLU": {"C"}}  # B is witnessed at 1e-3 only
    assert survivors(store, KBV, [KB, KBV]) == {"demo/1_LeakyReLU": set()}


def test_unrefereeable_problems_are_excluded(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    store.db["problems"].update("demo/1_LeakyReLU", {"refereeable": 0, "reason": "constant reference"})
    assert load_matrices(store) == []


def test_bootstrap_band_brackets_the_pooled_rate() -> None:
    per_problem = [(9, 10), (1, 10), (5, 10), (7, 10), (3, 10)] * 4
    lo, hi = bootstrap_band(per_problem)
    assert lo < 0.5 < hi and 0.2 < lo and hi < 0.8
    assert bootstrap_band([(5, 10)] * 10) == (0.5, 0.5)


def test_the_ladder_sets_a_generator_beside_fuzz_on_every_survivor_both_ran_on(demo: ProblemSet) -> None:
    from dataclasses import replace

    store = Store(":memory:")
    ids = seed(store, demo.get("demo/1"))
    generator, fuzz = replace(KBV, name="gen"), replace(KB, name="fuzz")  # fuzz: the official inputs at 1e-2
    ladder = audit(generator, load_matrices(store), [KB, fuzz], vs=KB)["vs"]["ladder"]
    # KB lets B, C and D through; the generator (1e-3, hidden inputs) kills B and C, fuzz none
    assert ladder["baseline"] == "fuzz"
    assert {k: ladder["all_survivors"][k] for k in ("survivors", "killed", "fuzz_killed")} == \
        {"survivors": 3, "killed": 2, "fuzz_killed": 0}
    # every witness comes from the generator's or fuzz's own inputs: none is left to compare on
    assert ladder["witnessed_by_others"]["survivors"] == 0
    # a survivor the generator was not run on in full is no survivor of the ladder
    store.db.execute("delete from cells where mutant = 'D' and input = ?", [ids["hidden x-1"]])
    store.db.conn.commit()
    ladder = audit(generator, load_matrices(store), [KB, fuzz], vs=KB)["vs"]["ladder"]
    assert (ladder["all_survivors"]["survivors"], ladder["all_survivors"]["killed"]) == (2, 2)
    assert "ladder" not in audit(generator, load_matrices(store), [KB], vs=KB)["vs"]  # no fuzz to set it beside


def test_every_protocol_on_one_denominator(demo: ProblemSet, tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from kbm_toolkit.cli import cli

    store = Store(tmp_path / "s.db")
    seed(store, demo.get("demo/1"))
    store.close()
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "--all", "--json",
                                      "--denominator", "kernelbench", "--denominator", "kbv"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # A (official inputs at 1e-2), B (at kbv's 1e-3) and C (kbv's hidden x-1): one set for both
    assert report["witnessed"] == 3 and report["problems"] == 1
    rows = {r["protocol"]: r for r in report["protocols"]}
    assert (rows["kernelbench"]["detected"], rows["kbv"]["detected"]) == (1, 3)
    assert (rows["kernelbench"]["false_rejections"], rows["kbv"]["false_rejections"]) == (0, 1)
    text = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "--all",
                                    "--denominator", "kernelbench", "--denominator", "kbv"]).output
    assert "One denominator for every protocol: 3 mutants witnessed by any of kbv, kernelbench" in " ".join(text.split())
    both = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "--all", "-a", "kbv"])
    assert both.exit_code == 2 and "--adapter P" in both.output


def test_the_witness_search_is_open_where_a_denominator_lacks_cells_on_an_unwitnessed_mutant(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    whole = audit(KB, load_matrices(store), [KB, KBV])
    assert whole["witness_search_open"] == {"mutants": 0, "by": {}}
    # D, which nothing witnesses, and A, which the official trials kill, lose their cells on kbv's hidden inputs
    store.db.execute("delete from cells where mutant in ('A', 'D') and input in "
                     "(select id from inputs where label like 'hidden%')")
    store.db.conn.commit()
    report = audit(KB, load_matrices(store), [KB, KBV])
    assert report["witness_search_open"] == {"mutants": 1, "by": {"kbv": 1}}  # A is witnessed already
    assert report["witnessed"] == whole["witnessed"]  # the denominator as it stands: the open search is said
    assert audit(KBV, load_matrices(store), [KB, KBV])["missing"]["cells"] == {"demo/1_LeakyReLU": 2}
    # kbm equivalence proves D runs the original's code at every shape kbv's inputs build: out of its reach
    shapes = {s.shape_key for s in KBV.specs(demo.get("demo/1"))}
    store.record_shape_verdicts([{"mutant": "D", "shape": k, "same": 1, "note": ""} for k in shapes], "sm_90", "13")
    proved = audit(KB, load_matrices(store), [KB, KBV])
    assert proved["witness_search_open"] == {"mutants": 0, "by": {}}
    assert audit(KBV, load_matrices(store), [KB, KBV])["missing"]["cells"] == {}  # its lacking cells are no gap
