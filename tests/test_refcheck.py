"""kbm refcheck and the audit's exclusions: the reference's own precision and the vacuity band."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.analysis.refereeability import flags
from kbm_toolkit.evaluation.reference_check import refcheck_task
from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.score import audit
from kbm_toolkit.store import Store

from support import seed

KB = load_protocol("kernelbench")


def test_the_task_measures_the_fp32_reference_against_fp64_on_the_cpu(demo: ProblemSet) -> None:
    problem = demo.get("demo/3")  # LayerNorm: a reduction, so fp32 and fp64 differ a little
    specs = KB.specs(problem)[:2]
    rows = list(refcheck_task({"problem": problem.record(),
                               "specs": [s.record() for s in specs], "device": "cpu"}))
    assert [r["input"] for r in rows] == [s.id for s in specs]
    assert all(0 < r["fp64_margin"] < 1e-4 and r["ref_abs_max"] > 0.1 for r in rows)


def test_integer_references_are_exact(demo: ProblemSet) -> None:
    problem = demo.get("demo/5")  # Argmax
    (row,) = refcheck_task({"problem": problem.record(),
                            "specs": [KB.specs(problem)[0].record()], "device": "cpu"})
    assert "fp64_margin" not in row and "not a floating tensor" in row["note"]


def test_flags_a_reference_off_its_fp64_and_a_vacuous_output(demo: ProblemSet) -> None:
    off, tiny, fine = demo.get("demo/1"), demo.get("demo/2"), demo.get("demo/3")
    ids = {p.key: [s.id for s in KB.specs(p)] for p in (off, tiny, fine)}
    checks = {ids[off.key][2]: {"fp64_margin": 0.05}, ids[fine.key][0]: {"fp64_margin": 1e-6}}
    magnitudes = {off.key: {i: {"ref_abs_max": 3.0} for i in ids[off.key]},
                  tiny.key: {i: {"ref_abs_max": 5e-3} for i in ids[tiny.key]},
                  fine.key: {i: {"ref_abs_max": 2.0} for i in ids[fine.key]}}
    found = flags(KB, [off, tiny, fine], checks, input_checks=magnitudes)
    assert set(found) == {off.key, tiny.key}
    assert "fp64" in found[off.key] and "official trial 2" in found[off.key]
    assert "all-zeros" in found[tiny.key]
    assert set(flags(KB, [off, tiny, fine], checks, 1e-3, magnitudes)) == {off.key}  # 5e-3 is no longer within reach of zero


def test_a_problem_the_protocol_excludes_is_flagged_not_scored_as_missed(demo: ProblemSet) -> None:
    from dataclasses import replace

    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    matrices = load_matrices(store)
    skips = replace(KB, name="skips", exclude=("demo/1",), _specs={})
    assert skips.specs(demo.get("demo/1")) == []
    problems = [mx.problem for mx in matrices]
    found = flags(skips, problems, {})
    assert "excludes" in found["demo/1_LeakyReLU"] and flags(KB, problems, {}) == {}
    # without the flag, every witness of the problem would count as a miss of a protocol that never looks
    assert audit(skips, matrices, [KB])["detected"] == 0
    assert audit(skips, matrices, [KB], excluded=found)["witnessed"] == 0


def test_the_audit_leaves_excluded_problems_out_and_lists_them(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    matrices = load_matrices(store)
    report = audit(KB, matrices, [KB], excluded={"demo/1_LeakyReLU": "vacuous"})
    assert report["witnessed"] == 0 and report["excluded"] == {"demo/1_LeakyReLU": "vacuous"}
    assert audit(KB, matrices, [KB])["witnessed"] > 0


def test_refcheck_command_stores_checks_resumes_and_the_audit_reads_them(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    runner = CliRunner()
    first = runner.invoke(cli, ["--store", str(db), "refcheck", "-a", "kernelbench", "demo/1", "demo/2"])
    assert first.exit_code == 0, first.output
    assert "ok    demo/1_LeakyReLU" in first.output and "flag  demo/2_Softmax" in first.output
    stored = Store(db).db["reference_checks"].count
    assert stored == 10
    again = runner.invoke(cli, ["--store", str(db), "refcheck", "-a", "kernelbench", "demo/1", "demo/2"])
    assert again.exit_code == 0 and Store(db).db["reference_checks"].count == stored
    assert json.loads(runner.invoke(cli, ["--store", str(db), "audit", "-a", "kernelbench", "--json"]).stdout)[
        "excluded"] == {}  # no mutants there yet: nothing to leave out


@pytest.mark.parametrize("protocol", ["kernelbench", "kbv"])
def test_the_shipped_audit_leaves_out_the_vacuous_softmax(protocol: str) -> None:
    result = CliRunner().invoke(cli, ["--store", "@demo", "audit", "-a", protocol, "--json"])
    report = json.loads(result.stdout)
    assert "all-zeros" in report["excluded"].get("demo/2_Softmax", "")
