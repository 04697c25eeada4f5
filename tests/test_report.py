"""kbm report: figures and the HTML page, from a hand-built store."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.store import Store

from support import seed


def test_report_draws_every_figure_and_the_tables(tmp_path: Path, demo: ProblemSet) -> None:
    store = Store(tmp_path / "s.db")
    seed(store, demo.get("demo/1"))
    store.close()
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "report", "--out", str(out),
                                      "-a", "kernelbench", "-a", "kbv"])
    assert result.exit_code == 0, result.output
    for name in ("missed_by_family", "problem_miss_curve", "budget_curve", "blind_band", "blind_band_by_length",
                 "miss_patterns", "band_by_problems", "cover_sizes"):
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.svg").is_file()
    page = (out / "index.html").read_text()
    assert "Table 1: the mutation pipeline" in page and "Table 2" in page
    # precision: B, off by 5e-3, is witnessed at kbv's 1e-3 (and caught there) but at no input at 1e-2
    assert "<td>precision</td><td>0</td><td>–</td><td>0.0% of 1</td>" in page
    assert "<li>kernelbench: 2 mutants witnessed at 0.01 by any of fuzz, fuzz-shapes, kbv, " in page
    assert "<p></p>" not in page and "`" not in page  # the provenance line is there; code is marked up
    union = tmp_path / "union"
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "report", "--out", str(union),
                                      "-a", "kernelbench", "-a", "kbv", "--accounting", "union"])
    assert result.exit_code == 0, result.output
    # in the union accounting kbv's witness counts against kernelbench too: missed at 1e-2
    assert "<td>precision</td><td>1</td><td>100.0% of 1</td><td>0.0% of 1</td>" in (union / "index.html").read_text()



def test_a_share_under_one_percent_keeps_its_digits() -> None:
    from kbm_toolkit.report.audit import sample_words

    assert sample_words({"share": 0.005}) == "a 0.5% sample of each problem's"
    assert sample_words({"share": 0.6}) == "a 60% sample of each problem's"
    assert sample_words({"share": 0.6, "least": 0.005, "problems_at": [(0.005, 8), (0.6, 38)]}) == (
        "a 0.5–60% sample of each problem's (8 problems at 0.5%, 38 problems at 60%; --sample 0.005 scores all alike)")


def test_a_runs_split_says_how_many_warm_spares_another_worker_lent(capsys) -> None:
    from kbm_toolkit.report.runs import print_split

    split = {"run": 7, "kind": "evaluate", "wall_s": 10.0, "workers": 2, "worker_s": 20.0, "restarts": 5,
             "parts": [{"part": "launches", "seconds": 12.0, "share": 0.6, "what": "mutants' launches"}],
             "spares": {"starts": 7, "found_warm": 5, "borrowed": 2, "warm_s_median": 1.8, "warm_s_max": 5.9}}
    print_split(split)
    assert "Workers started: 7, 5 of them warm when needed (2 lent by another worker on the GPU)" in capsys.readouterr().out
    split["spares"]["borrowed"] = 0
    print_split(split)
    assert "5 of them warm when needed; spawn" in capsys.readouterr().out


def test_a_runs_split_names_the_problems_with_the_most_time_outside_launches(capsys) -> None:
    from kbm_toolkit.analysis.runs import problem_split
    from kbm_toolkit.report.runs import PROBLEMS_SHOWN, print_split

    problems = {"level2/49_ConvTranspose3d": {"launches": 4.9, "building ahead": 23.5, "crashed": 1.7, "crashes": 4,
                                              "compared_bytes": 9e9, "compares": 50, "compare_gpu_s": 0.2},
                "level1/19_ReLU": {"launches": 30.0, "comparing": 0.8, "checking": 0.7},
                "level1/1_Square": {"launches": 2.0}}
    rows = problem_split(problems)
    # sizes and counts are not seconds: outside launches is 23.5 + 1.7, not the bytes compared
    assert [(r["problem"], round(r["outside"], 2), r["largest"], r["crashes"]) for r in rows] == [
        ("level2/49_ConvTranspose3d", 25.2, "building ahead", 4), ("level1/19_ReLU", 1.5, "comparing", None),
        ("level1/1_Square", 0.0, None, None)]
    assert [r["s_per_crash"] for r in rows] == [1.7 / 4, None, None]  # 1.7 s of crashed launches over 4 crashes
    many = {f"demo/{i}": {"launches": 1.0, "tail": float(i)} for i in range(PROBLEMS_SHOWN + 3)}
    print_split({"run": 7, "kind": "evaluate", "wall_s": 10.0, "workers": 2, "worker_s": 20.0, "restarts": 5,
                 "parts": [{"part": "launches", "seconds": 12.0, "share": 0.6, "what": "mutants' launches"}],
                 "problems": problem_split(many)})
    out = capsys.readouterr().out
    assert f"Problems by time outside launches ({PROBLEMS_SHOWN} of {PROBLEMS_SHOWN + 3})" in out
    assert "tail 12.0 s" in out and "demo/2 " not in out  # the three with the least time are left out
    assert "s per crash" in out


def test_a_band_narrows_as_problems_are_added() -> None:
    from kbm_toolkit.analysis.score import band_by_problems

    per_problem = [(9, 10), (5, 10), (10, 10), (2, 10), (7, 10), (8, 10)] * 10
    (k5, lo5, hi5), (k60, lo60, hi60) = band_by_problems(per_problem, [5, 60], draws=500)
    assert (k5, k60) == (5, 60) and hi5 - lo5 > 2 * (hi60 - lo60) > 0
    assert lo60 < sum(d for d, _ in per_problem) / sum(n for _, n in per_problem) < hi60


def test_cover_sizes_are_the_inputs_that_kill_all_an_input_kills(demo: ProblemSet) -> None:
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.suite import cover_sizes

    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    # at 1e-2: A dies on any official input, C on hidden x-1 only (B's 5e-3 and x3's invalid input kill nothing)
    assert cover_sizes(load_matrices(store), 1e-2) == {"demo/1_LeakyReLU": 2}
    # at 1e-3 the official inputs also kill B, which adds no input; hidden x3 is invalid there
    assert cover_sizes(load_matrices(store), 1e-3) == {"demo/1_LeakyReLU": 2}


def test_table_6_lists_where_the_official_check_misses_most(demo: ProblemSet) -> None:
    from kbm_toolkit.protocols.registry import all_protocols
    from kbm_toolkit.report.tables import tables_markdown

    store = Store(":memory:")
    seed(store, demo.get("demo/1"))
    text = tables_markdown(store, [load_protocol("kernelbench")], all_protocols())
    # A is caught; C, witnessed only by kbv's hidden x-1 input, is the one miss
    assert "| demo/1_LeakyReLU | 2 | 1 | 50.0% | semantic 1 |" in text.split("Table 6")[1]


def test_what_a_score_lacks_is_said_in_words_with_one_problem_singular() -> None:
    from kbm_toolkit.report.audit import missing_words

    assert missing_words({"level2/31": ["a", "b", "c"]}, {"level2/31": 12}) == (
        "3 of its inputs never checked and 12 cells missing on 1 problem")
    assert missing_words({"p": ["a"]}, {"q": 1_234}) == "1 of its inputs never checked and 1,234 cells missing on 2 problems"
    assert missing_words({}, {}) == ""
