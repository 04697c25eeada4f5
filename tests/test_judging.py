"""Judging: atol and rtol apart, other comparisons, other references — against torch's own verdicts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.score import audit_store, run_protocol
from kbm_toolkit.cuda.comparison import compare
from kbm_toolkit.judging import PYTORCH_DEFAULT, STRICT, Judging, extra_margins, margin_key
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import ProtocolError, load_protocols
from kbm_toolkit.protocols.registry import all_protocols, load_protocol
from kbm_toolkit.store import Store
from kbm_toolkit.vocabulary import Accounting

from support import KB, KBV, seed

JUDGINGS = [Judging(1e-2, 1e-2), Judging(1e-5, 1e-3), Judging(1e-3, 1e-5), Judging(1e-3, 0.0, "absolute"),
            Judging(1e-5, 1.3e-6, "assert_close"), Judging(2e-3, 4e-3, "assert_close")]


def truth(j: Judging, ref: torch.Tensor, out: torch.Tensor) -> bool:
    """What torch itself says: allclose(ref, out) scales by |out|; assert_close(out, ref) by |ref|."""
    if j.scale == "output":
        return bool(torch.allclose(ref, out, atol=j.atol, rtol=j.rtol))
    return bool(torch.isclose(out, ref, atol=j.atol, rtol=j.rtol).all())


def pairs(n: int = 60) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(7)
    out = []
    for k in range(n):
        ref = torch.randn(256, generator=g) * 10 ** (k % 5 - 2)
        noise = torch.randn(256, generator=g) * 10 ** (-(k % 7) - 1)
        out.append((ref, ref + noise))
    return out


@pytest.mark.parametrize("j", JUDGINGS, ids=lambda j: j.words())
def test_a_stored_margin_decides_what_torch_decides(j: Judging) -> None:
    for ref, out in pairs():
        c = compare(ref, out, [(j.scale, j.ratio)])
        margins = {j.key: c.extra[(j.scale, j.ratio)]}
        assert j.decide("pass", c.margin, c.max_abs, margins) == truth(j, ref, out)


@pytest.mark.parametrize("j", JUDGINGS, ids=lambda j: j.words())
def test_the_columns_alone_decide_only_what_they_bracket_and_never_wrongly(j: Judging) -> None:
    decided = 0
    for ref, out in pairs():
        c = compare(ref, out)
        verdict = j.decide("pass", c.margin, c.max_abs, None, float(ref.abs().max()))
        if verdict is not None:
            decided += 1
            assert verdict == truth(j, ref, out)
    assert decided > 0


def test_a_ratio_other_than_one_or_zero_leaves_some_cells_undecided() -> None:
    j = Judging(1e-5, 1e-3)
    undecided = [j.decide("pass", compare(r, o).margin, compare(r, o).max_abs, None) is None for r, o in pairs()]
    assert any(undecided) and not all(undecided)


def test_a_result_that_is_not_a_pass_fails_every_judging() -> None:
    assert all(j.decide(outcome, None, None, None) is False for j in JUDGINGS for outcome in ("crash", "nonfinite"))


def test_another_reference_is_judged_only_by_margins_against_it() -> None:
    j = Judging(1e-3, 1e-3, reference=PYTORCH_DEFAULT)
    assert j.decide("pass", 1e-6, 1e-6, None) is None  # the strict columns say nothing of TF32
    assert j.decide("pass", 1e-6, 1e-6, {margin_key(PYTORCH_DEFAULT, "output", 1.0): 5e-3}) is False
    assert j.decide("pass", 1e-6, 1e-6, {margin_key(PYTORCH_DEFAULT, "output", 1.0): 5e-4}) is True


def write_protocol(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "protocol.toml"
    path.write_text('[protocol]\nname = "mine"\n' + body + '\n[[inputs]]\ntrials = 1\n')
    return path


@pytest.mark.parametrize("body, atol, rtol, comparison", [
    ("tolerance = 1e-3", 1e-3, 1e-3, "allclose"),
    ("atol = 1e-5\nrtol = 1e-3", 1e-5, 1e-3, "allclose"),
    ('comparison = "assert_close"', 1e-5, 1.3e-6, "assert_close"),
    ('comparison = "assert_close"\ndtype = "float16"', 1e-5, 1e-3, "assert_close"),
    ('comparison = "absolute"\natol = 1e-4', 1e-4, 0.0, "absolute"),
])
def test_a_protocol_declares_its_comparison(tmp_path: Path, body: str, atol: float, rtol: float,
                                             comparison: str) -> None:
    (p,) = load_protocols(write_protocol(tmp_path, body))
    assert (p.judge.atol, p.judge.rtol, p.judge.comparison, p.tolerance) == (atol, rtol, comparison, atol)


@pytest.mark.parametrize("body, words", [
    ("atol = 1e-5", "give tolerance"),
    ('tolerance = 1e-3\ncomparison = "nearly"', "comparison must be one of"),
    ('tolerance = 1e-3\nreference = "tf64"', "reference must be one of"),
    ('comparison = "absolute"\natol = 1e-4\nrtol = 1e-3', "has no rtol"),
    ("atol = 0\nrtol = 1e-3", "atol must be positive"),
    ("atol = 1e-3\nrtol = -1", "rtol must be a non-negative number"),
])
def test_a_bad_comparison_is_one_line_naming_the_file(tmp_path: Path, body: str, words: str) -> None:
    with pytest.raises(ProtocolError) as e:
        load_protocols(write_protocol(tmp_path, body))
    assert words in e.value.line() and "protocol.toml" in e.value.line()


def test_a_variants_tolerance_replaces_the_base_atol_and_rtol(tmp_path: Path) -> None:
    path = write_protocol(tmp_path, "atol = 1e-5\nrtol = 1e-3")
    path.write_text(path.read_text() + '\n[[variant]]\nname = "loose"\ntolerance = 1e-2\n')
    _, loose = load_protocols(path)
    assert (loose.judge.atol, loose.judge.rtol) == (1e-2, 1e-2) and loose.judging is None


def test_the_benchmarks_protocols_declare_the_reference_they_run() -> None:
    by_name = {p.name: p.judge.reference for p in all_protocols()}
    assert by_name["kernelbench"] == by_name["kernelbench-head"] == by_name["kbv"] == PYTORCH_DEFAULT
    assert by_name["fuzz"] == STRICT
    wanted = extra_margins([p.judge for p in all_protocols()])
    assert (PYTORCH_DEFAULT, "output", 1.0) in wanted and (PYTORCH_DEFAULT, "output", 0.0) in wanted
    assert (STRICT, "output", 1.0) not in wanted  # a column already


def with_tf32_margins(store: Store, ids: dict[str, str], rejected: str, cell_margin: float) -> None:
    """Give every check and cell of `seed`'s store a pytorch-default margin: the correct kernel
    misses by 5e-2 on `rejected`; mutant D by `cell_margin` on every input, the others as against strict fp32."""
    key = margin_key(PYTORCH_DEFAULT, "output", 1.0)
    for label, input_id in ids.items():
        store.add_check_margins("h", input_id, {key: 5e-2 if label == rejected else 1e-6,
                                                margin_key(PYTORCH_DEFAULT, "output", 0.0): 1e-6})
    with store.db.conn:
        store.db.execute("update cells set margins = ? where mutant = 'D'", [json.dumps({key: cell_margin})])
        store.db.execute("update cells set margins = json_object(?, margin) where mutant != 'D'", [key])


def test_the_audit_names_the_false_rejections_its_benchmarks_reference_makes(demo: ProblemSet) -> None:
    store = Store(":memory:")
    ids = seed(store, demo.get("demo/1"))
    with_tf32_margins(store, ids, "official trial 2", 1e-6)
    report = audit_store(store, KB, [KB, KBV])
    as_run = report["as_run"]
    assert as_run["problems"] == {"demo/1_LeakyReLU": {"inputs": 1, "worst_margin": 5e-2}}
    assert as_run["unmeasured_inputs"] == 0 and report["false_rejections"] == []  # strict fp32 rejects none


def test_without_margins_against_its_reference_the_audit_says_so(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    report = audit_store(store, KB, [KB, KBV])
    assert report["as_run"]["problems"] == {} and report["as_run"]["unmeasured_inputs"] == 5
    assert report["as_run"]["cells_judged_strict"] > 0


def test_cells_are_judged_against_the_protocols_own_reference_where_they_have_it(demo: ProblemSet) -> None:
    store = Store(":memory:")
    ids = seed(store, demo.get("demo/1"))
    before = run_protocol(KB, load_matrices(store)).detected["demo/1_LeakyReLU"]
    with_tf32_margins(store, ids, "", 0.5)  # D now misses the TF32 reference by far
    after = run_protocol(KB, load_matrices(store)).detected["demo/1_LeakyReLU"]
    assert "D" not in before and after == before | {"D"}


def test_rescoring_at_atol_and_rtol_counts_what_the_margins_leave_undecided(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    with store.db.conn:  # max |ref - out| three times each margin: B's is 1.5e-2 on the official inputs
        store.db.execute("update cells set max_abs = 3 * margin")
    # ratio 1e-2 brackets a margin between the stored margin and max |ref - out|
    # the union accounting: B, which only a 1e-3 check sees, is in the denominator to be caught
    report = audit_store(store, KB, [KB, KBV], judging=KB.judge.with_tolerances(1e-3, 1e-5), accounting=Accounting.UNION)
    assert report["detected"] == 2 and report["undecided"] == {"cells": 0, "checks": 0}  # B: [5e-3, 1.5e-2] > 1e-3
    loose = audit_store(store, KB, [KB, KBV], judging=KB.judge.with_tolerances(1e-2, 1e-5), accounting=Accounting.UNION)
    assert loose["undecided"]["cells"] == 5 and loose["detected"] == 1  # B's five official cells straddle 1e-2
    assert "atol 0.01 rtol 1e-05" in loose["judging"]


def test_stored_margins_keep_a_cell_the_floor_would_drop() -> None:
    store = Store(":memory:")
    store.db["mutants"].insert({"id": "M", "problem": "p", "substrate_hash": "h", "status": "distinct"})
    run = store.start_run("evaluate", {})
    store.record_cells(run, [{"mutant": "M", "input": "i", "outcome": "pass", "margin": 1e-6, "max_abs": 1e-6,
                              "margins": {margin_key(PYTORCH_DEFAULT, "output", 1.0): 0.5}}])
    rows = store.matrix_rows(floor=1e-4, details=True)["p"]
    assert rows["details"][("M", "i")] == (1e-6, {margin_key(PYTORCH_DEFAULT, "output", 1.0): 0.5})
    assert store.matrix_rows(floor=1e-4)["p"]["cells"] == {}  # without details: dropped, as before


def test_an_infinite_margin_is_stored_as_null_and_read_as_infinite() -> None:
    store = Store(":memory:")
    store.db["mutants"].insert({"id": "M", "problem": "p", "substrate_hash": "h", "status": "distinct"})
    run = store.start_run("evaluate", {})
    key = margin_key(PYTORCH_DEFAULT, "output", 1.0)
    store.record_cells(run, [{"mutant": "M", "input": "i", "outcome": "pass", "margin": 1e-6, "max_abs": 1e-6,
                              "margins": {key: math.inf}}])
    assert json.loads(store.db["cells"].get(("M", "i"))["margins"]) == {key: None}
    assert Judging(1e-2, 1e-2, reference=PYTORCH_DEFAULT).decide("pass", 1e-6, 1e-6, {key: None}) is False


def test_a_suite_protocol_keeps_its_judging_when_written_out(tmp_path: Path) -> None:
    from kbm_toolkit.protocols.protocol import protocol_toml

    (tmp_path / "protocol.toml").write_text(protocol_toml("s", "d", 1e-5, {}, judging=Judging(1e-5, 1e-3,
                                                                                               reference=PYTORCH_DEFAULT))
                                            + '[[inputs]]\ntrials = 1\n')
    (p,) = load_protocols(tmp_path)
    assert p.judge == Judging(1e-5, 1e-3, reference=PYTORCH_DEFAULT)


def test_the_cli_rescoring_options(demo: ProblemSet, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kbm_toolkit.cli import cli

    store = Store(tmp_path / "s.db")
    seed(store, demo.get("demo/1"))
    runner = CliRunner()
    both = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "-a", "kernelbench", "--tolerance", "1e-3",
                               "--atol", "1e-3", "--no-run"])
    assert both.exit_code == 2 and "not both" in both.output
    ok = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "-a", "kernelbench", "--atol", "1e-2",
                             "--rtol", "1e-5", "--no-run"])
    assert ok.exit_code == 0, ok.output
    assert "atol 0.01 rtol 1e-05" in ok.output and "Undecided by the stored margins" in ok.output
    assert load_protocol("kernelbench").judge.reference == PYTORCH_DEFAULT
