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

from support import problem_from_source, seed

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
    assert "positions wrong: 0 of 65,536 (its inputs moved one ulp: 0 move past 0.01)" in first.output
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


@pytest.mark.parametrize("exact, ref, counts", [
    # (fp64, fp32, positions failing allclose(exact, ref, atol = rtol = t) at 1e-2 and 1e-3)
    ([1.0, 2.0], [1.0, 2.0], {"0.01": 0, "0.001": 0}),
    ([2.0], [2.05], {"0.01": 1, "0.001": 1}),               # 0.05 > t (1 + 2.05) at both
    ([0.0], [0.005], {"0.01": 0, "0.001": 1}),              # within 1e-2 of zero, not 1e-3
    ([float("inf")], [float("inf")], {"0.01": 0, "0.001": 0}),  # equal infinities pass
    ([float("-inf")], [float("inf")], {"0.01": 1, "0.001": 1}),
    ([float("nan")], [1.0], {"0.01": 1, "0.001": 1}),
    ([1.0], [float("nan")], {"0.01": 1, "0.001": 1}),
])
def test_wrong_positions_are_counted_as_allclose_fails_them(exact, ref, counts) -> None:
    import torch

    from kbm_toolkit.evaluation.reference_check import violations

    assert violations(torch.tensor(exact, dtype=torch.float64), torch.tensor(ref), [1e-3, 1e-2]) == counts


def test_the_task_counts_wrong_positions_and_checksums_the_output(demo: ProblemSet) -> None:
    problem = demo.get("demo/3")
    specs = KB.specs(problem)[:2]
    rows = list(refcheck_task({"problem": problem.record(), "specs": [s.record() for s in specs], "device": "cpu",
                               "tolerances": [1e-2, 1e-7]}))
    assert all(r["positions"] == 16 * 2048 and r["violations"]["0.01"] == 0 for r in rows)
    assert all(0 < r["violations"]["1e-07"] < r["positions"] for r in rows)  # fp32 rounding, far below 1e-2
    assert len({r["output_checksum"] for r in rows}) == 2  # two trial seeds, two outputs


def test_an_output_that_ignores_its_input_is_flagged(tmp_path: Path) -> None:
    from kbm_toolkit.problems.problem import Problem

    path = tmp_path / "1_Constant.py"
    path.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.w = torch.nn.Parameter(torch.randn(4, 8))\n\n"
                    "    def forward(self, x):\n        return self.w * 2.0  # x is never read\n\n"
                    "def get_inputs():\n    return [torch.rand(4, 8)]\n\ndef get_init_inputs():\n    return []\n")
    problem = Problem("mine/1_Constant", "mine", 1, "Constant", path, "mine")
    specs = KB.specs(problem)
    checks = {r["input"]: r for r in refcheck_task({"problem": problem.record(), "device": "cpu",
                                                     "specs": [s.record() for s in specs]})}
    assert len({c["output_checksum"] for c in checks.values()}) == 1
    found = flags(KB, [problem], checks)
    assert found[problem.key] == ("input-insensitive: the reference's output is the same, bit for bit, on all 5 "
                                  "inputs checked; a kernel that ignores its input passes")
    one = {specs[0].id: checks[specs[0].id]}  # one input alone says nothing of insensitivity
    assert flags(KB, [problem], one) == {}


def test_the_fp64_flag_says_how_many_positions_are_wrong(demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    first = KB.specs(problem)[0]
    checks = {first.id: {"fp64_margin": 0.05, "violations": {"0.01": 12, "0.001": 40}, "positions": 65536}}
    assert flags(KB, [problem], checks)[problem.key] == \
        "the reference misses its fp64 evaluation by 5.0e-02 > 0.01 (official trial 0; 12 of 65,536 positions)"


def _problem(tmp_path: Path, name: str, body: str):
    from kbm_toolkit.problems.problem import Problem

    path = tmp_path / f"1_{name}.py"
    path.write_text("import torch\n\n" + body + "\n\ndef get_inputs():\n    return [torch.rand(3, 8)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    return Problem(f"mine/1_{name}", "mine", 1, name, path, "mine")


# LSTM-like: the forward draws its initial state in the default dtype
DRAWS = ("class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
         "        self.lin = torch.nn.Linear(8, 8)\n\n"
         "    def forward(self, x):\n        h0 = torch.randn(x.shape[0], 8, device=x.device)\n"
         "        return self.lin(x) + h0 @ self.lin.weight  # a matmul refuses mixed dtypes\n")
# minGPT-like: a function kept as an attribute, over one of the model's own submodules
CLOSES_OVER = ("class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.lin = torch.nn.Linear(8, 8)\n        lin = self.lin\n"
               "        self.f = lambda x: lin(x) * 2.0\n\n"
               "    def forward(self, x):\n        return self.f(x)\n")


@pytest.mark.parametrize("name, body", [("Draws", DRAWS), ("ClosesOver", CLOSES_OVER)])
def test_the_fp64_evaluation_runs_models_that_make_or_capture_fp32_tensors(tmp_path: Path, name: str, body: str) -> None:
    problem = _problem(tmp_path, name, body)
    rows = list(refcheck_task({"problem": problem.record(), "device": "cpu",
                               "specs": [s.record() for s in KB.specs(problem)[:2]]}))
    # fp32 rounding of a length-8 dot product: the same random draws, in both precisions
    assert all(0 < r["fp64_margin"] < 1e-5 and "note" not in r for r in rows)


def test_a_check_that_stopped_is_an_error_not_ok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.evaluation import reference_check

    problem = _problem(tmp_path, "Fine", CLOSES_OVER)
    monkeypatch.setattr(reference_check, "check_references", lambda *a: {problem.key: "error: RuntimeError: boom"})
    [row] = reference_check.refcheck(Store(tmp_path / "kbm.db"), [problem], KB).rows
    assert row.verdict == "error" and row.raised == "the check stopped: error: RuntimeError: boom"


# chaotic at fp32 resolution: one ulp of x in [0.5, 1) moves x * 1e7 by about 0.6, and its sine with it
CHAOTIC = ("class Model(torch.nn.Module):\n    def forward(self, x):\n"
           "        return torch.sin(x * 1e7)\n")


def test_the_task_counts_positions_that_move_when_the_inputs_move_one_ulp(tmp_path: Path, demo: ProblemSet) -> None:
    layer_norm = demo.get("demo/3")
    [calm] = refcheck_task({"problem": layer_norm.record(), "device": "cpu", "tolerances": [1e-2, 1e-7],
                            "specs": [KB.specs(layer_norm)[0].record()]})
    assert calm["nudge_violations"]["0.01"] == 0 < calm["nudge_violations"]["1e-07"]  # it moves, by rounding's size
    chaotic = _problem(tmp_path, "Chaotic", CHAOTIC)
    rows = list(refcheck_task({"problem": chaotic.record(), "device": "cpu",
                               "specs": [s.record() for s in KB.specs(chaotic)[:2]]}))
    assert all(r["positions"] == 24 and r["nudge_violations"]["0.01"] > 12 for r in rows)
    found = flags(KB, [chaotic], {r["input"]: r for r in rows})[chaotic.key]
    assert found.startswith("the reference misses its fp64 evaluation by") and "when its inputs move one ulp)" in found


def test_refcheck_reports_moved_positions_and_checks_an_older_check_again(tmp_path: Path) -> None:
    from kbm_toolkit.evaluation.reference_check import refcheck

    chaotic = _problem(tmp_path, "Chaotic", CHAOTIC)
    store = Store(tmp_path / "kbm.db")
    [row] = refcheck(store, [chaotic], KB).rows
    assert row.verdict == "flag" and row.positions == 24 and 12 < row.moved <= 24
    with store.db.conn:  # a check from before the nudge was counted
        store.db.execute("update reference_checks set nudge_violations = null, run = 0")
    [again] = refcheck(store, [chaotic], KB).rows
    assert again.moved == row.moved and {r["run"] for r in store.db["reference_checks"].rows} != {0}


def test_a_forward_that_rejects_the_moved_inputs_is_noted_not_checked_again(tmp_path: Path) -> None:
    from kbm_toolkit.evaluation.reference_check import NUDGE_RAISED, refcheck

    # a 0/1 mask: moved one ulp, no value is 0 or 1 any more
    mask = problem_from_source(tmp_path, "Mask", "import torch\n\nclass Model(torch.nn.Module):\n"
                               "    def forward(self, m):\n        assert bool((m * (1 - m) == 0).all()), 'not a mask'\n"
                               "        return m * 2\n\ndef get_inputs():\n    return [torch.rand(3, 8).round()]\n\n"
                               "def get_init_inputs():\n    return []\n")
    store = Store(tmp_path / "kbm.db")
    [row] = refcheck(store, [mask], KB).rows
    assert row.verdict == "ok" and row.moved is None and row.wrong == 0
    notes = [r["note"] for r in store.db["reference_checks"].rows]
    assert len(notes) == 5 and all(n.startswith(NUDGE_RAISED + ": AssertionError: not a mask") for n in notes)
    runs = {r["run"] for r in store.db["reference_checks"].rows}
    refcheck(store, [mask], KB)
    assert {r["run"] for r in store.db["reference_checks"].rows} == runs  # noted, so not made again
