"""kbm report: figures and the HTML page, from a hand-built store."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.problems.problem_set import ProblemSet
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
    for name in ("missed_by_family", "problem_miss_curve", "budget_curve", "blind_band"):
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
