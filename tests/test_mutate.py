"""Mutant generation, NVRTC screening (compile error, equivalent, duplicate) and the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.screening import screen
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.store import Store
from kbm_toolkit.problems.substrate import Substrate, substrate_for

from support import SCREENING_RULES, rule


@pytest.fixture
def leaky(demo: ProblemSet) -> Substrate:
    return substrate_for(demo.get("demo/1"))


def test_screening_classifies_every_mutant(leaky: Substrate) -> None:
    mutants = generate(leaky, SCREENING_RULES)
    screened = {s.mutant.rule: s for s in screen(mutants, leaky.source, leaky.launcher_source, "sm_90", workers=2)}
    assert screened["breaks-compile"].status == "compile_error"
    assert "outt" in screened["breaks-compile"].message
    assert screened["commutes"].status == "equivalent"
    assert screened["slope-div"].status == "distinct"
    assert screened["slope-div-again"].status == "duplicate"
    assert screened["slope-div-again"].duplicate_of == screened["slope-div"].mutant.id


def test_ids_are_stable_and_change_with_the_substrate(leaky: Substrate, tmp_path: Path) -> None:
    first = [m.id for m in generate(leaky, load_rules())]
    second = [m.id for m in generate(leaky, load_rules())]
    assert first == second and len(set(first)) == len(first)
    copy = tmp_path / "demo" / "1_LeakyReLU"
    copy.mkdir(parents=True)
    (copy / "kernel.cu").write_text(leaky.source + "\n// edited\n")
    (copy / "launch.py").write_text(leaky.launcher_source)
    moved = Substrate(leaky.problem_key, copy)
    assert moved.content_hash != leaky.content_hash
    assert not set(first) & {m.id for m in generate(moved, load_rules())}


def test_two_problems_sharing_one_substrate_source_get_distinct_ids(leaky: Substrate) -> None:
    twin = Substrate("level1/999_Twin", leaky.folder)
    mine, theirs = generate(leaky, load_rules()), generate(twin, load_rules())
    assert len(mine) == len(theirs) > 0 and not {m.id for m in mine} & {m.id for m in theirs}


def test_each_mutant_differs_from_its_substrate_at_one_site(leaky: Substrate) -> None:
    for m in generate(leaky, load_rules()):
        diff = m.diff(leaky)
        removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
        added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
        assert len(removed) == 1 and len(added) >= 1, m.name
        assert f"{m.file}:{m.site.line}:{m.site.col}" in m.name


def test_two_sites_on_one_line_are_two_mutants(leaky: Substrate) -> None:
    one_line = [m for m in generate(leaky, [rule("v2w", r"\bv\b", "w")]) if m.site.line == 7]
    assert len({m.site.col for m in one_line}) == len(one_line) == 3


def test_launcher_mutants_keep_the_kernel_image(leaky: Substrate) -> None:
    rules = [r for r in load_rules() if r.target == "launcher"]
    screened = screen(generate(leaky, rules), leaky.source, leaky.launcher_source, "sm_90", workers=1)
    assert screened and all(s.status == "distinct" for s in screened)
    assert len({s.image_hash for s in screened}) == 1


def test_broken_launcher_mutant_is_a_compile_error(leaky: Substrate) -> None:
    bad = rule("py-syntax", r"return out", "return out)", target="launcher")
    (s,) = screen(generate(leaky, [bad]), leaky.source, leaky.launcher_source, "sm_90", workers=1)
    assert s.status == "compile_error" and "launch.py" in s.message


def test_mutants_are_recorded_and_replaced_not_duplicated(leaky: Substrate, demo: ProblemSet) -> None:
    store = Store(":memory:")
    store.record_problem(demo.get("demo/1"))
    store.record_rules(SCREENING_RULES)
    mutants = generate(leaky, SCREENING_RULES)
    screened = screen(mutants, leaky.source, leaky.launcher_source, "sm_90", workers=1)
    diffs = {m.id: m.diff(leaky) for m in mutants}
    store.record_mutants(leaky.problem_key, screened, diffs, "sm_90")
    store.record_mutants(leaky.problem_key, screened, diffs, "sm_90")
    rows = list(store.mutants(problem=leaky.problem_key))
    assert len(rows) == len(mutants)
    assert {r["status"] for r in rows} == {"compile_error", "equivalent", "distinct", "duplicate"}
    assert list(store.mutants(status="duplicate"))[0]["duplicate_of"] == screened[2].mutant.id
    assert store.mutant(rows[0]["id"][:6])["id"] == rows[0]["id"]


def test_cli_mutate_list_and_show(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.db")
    result = runner.invoke(cli, ["--store", db, "mutate", "demo/1", "--ungated", "--rule", "plus2minus",
                                 "--rule", "mul2div", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "Mutation pipeline over 1 substrates" in result.output and "mul2div" in result.output
    listed = runner.invoke(cli, ["--store", db, "mutants", "--rule", "mul2div"])
    assert listed.exit_code == 0 and "kernel.cu:" in listed.output
    first_id = listed.output.split()[0]
    shown = runner.invoke(cli, ["--store", db, "show", first_id])
    assert shown.exit_code == 0 and "@@" in shown.output and "rule     mul2div (arithmetic)" in shown.output


def test_cli_mutate_skips_ungated_substrates_and_with_nothing_mutated_exits_bad_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kbm_toolkit.mutation.campaign.shipped_store_path", lambda: tmp_path / "none.db")
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "mutate", "demo/1"])
    assert result.exit_code == ExitCode.BAD_INPUT and "skipped demo/1_LeakyReLU: not gated" in result.output


def test_cli_unknown_rule_and_mutant(tmp_path: Path) -> None:
    runner = CliRunner()
    bad_rule = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "mutate", "demo/1", "--ungated", "--rule", "nope"])
    assert bad_rule.exit_code == 3 and "no rule named 'nope'" in bad_rule.output
    missing = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "show", "ffff"])
    assert missing.exit_code == 3 and "no mutant with id 'ffff'" in missing.output


@pytest.mark.parametrize("original, replacement, shown", [
    ("i < n", "i <= n", ("<", "<=")),                                              # one token
    ("for (int t = 0; t < (K + TILE - 1) / TILE", "for (int t = 0; t < (K + TILE - 1) / TILE - 1",
     ("TILE", "TILE - 1")),                                                       # insertion: context kept
    ("__syncthreads();", ";", ("__syncthreads()", "")),                           # deletion
    ("out[i] = acc;", "out[i] = -(acc);", ("acc", "-(acc)")),
])
def test_names_show_the_actual_edit(original: str, replacement: str, shown: tuple) -> None:
    from kbm_toolkit.mutation.mutants import changed_part

    assert changed_part(original, replacement) == shown


def test_samples_are_a_fair_nested_draw() -> None:
    from kbm_toolkit.mutation.mutants import mutant_id
    from kbm_toolkit.store import in_sample

    ids = [mutant_id("p", "h", "r", i, i + 1, "x") for i in range(4000)]
    tenth = {m for m in ids if in_sample(m, 0.1)}
    fifth = {m for m in ids if in_sample(m, 0.2)}
    assert tenth <= fifth
    assert 320 < len(tenth) < 480 and 700 < len(fifth) < 900
    assert all(in_sample(m, None) and in_sample(m, 1.0) for m in ids[:10])
