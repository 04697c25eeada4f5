"""bench/eval_throughput.py and bench/compare_cells.py without a GPU: the options, the input copy,
a run's analysis, the table, the cell comparison, and the whole bench with its runs faked."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kbm_toolkit.store import Store

from support import REPO, load_script

bench = load_script("bench/eval_throughput.py")
compare = load_script("bench/compare_cells.py")

SECONDS = {"launches": 60.0, "comparing": 10.0, "checking": 5.0, "building": 8.0, "references": 4.0,
           "correct": 2.0, "planning": 1.0, "spares": 0.0, "tail": 0.0, "crashed": 0.0, "loading": 0.5,
           "other": 9.5, "wall": 100.0}


def make_store(path: Path, margins: dict[str, float | None] | None = None, problems: tuple[str, ...] = ("lv/1_A", "lv/2_B"),
               stats: dict | None = None) -> Store:
    """Two problems with two mutants each, an input per problem, its check and every cell."""
    store = Store(path)
    for key in problems:
        store.db["problems"].insert({"key": key, "level": "lv", "number": int(key[3]), "name": key[5:],
                                     "sample": 0.5, "full_rows": 0.25})
        store.db["inputs"].insert({"id": f"in-{key}", "problem": key, "spec": "{}", "label": "official trial 0",
                                   "source": "kernelbench"})
        for m in ("x", "y"):
            store.db["mutants"].insert({"id": f"{m}-{key}", "problem": key, "substrate_hash": "h", "rule": f"rule-{m}",
                                        "family": "arithmetic", "status": "distinct", "name": f"{m} of {key}"})
    run = store.start_run("evaluate", {"gpu": "test GPU", "workers": 1})
    for key in problems:
        store.record_input_check("h", run, {"input": f"in-{key}", "valid": True, "outcome": "pass", "margin": 1e-7,
                                            "max_abs": 1e-7})
    margins = margins or {}
    store.record_cells(run, [{"mutant": f"{m}-{key}", "input": f"in-{key}", "outcome": "pass",
                              "margin": margins.get(f"{m}-{key}", 0.5), "ms": 2.0}
                             for key in problems for m in ("x", "y")])
    store.finish_run(run, stats if stats is not None else {"seconds": SECONDS, "compared_bytes": 4e9})
    return store


def test_defaults_hold_the_issue_slice():
    args = bench.parse_args(["--store", "s.db"])
    keys = args.problems
    assert len(keys) >= 10 and len(set(keys)) == len(keys)
    assert {"level1/19_ReLU", "level1/23_Softmax", "level1/47_Sum_reduction_over_a_dimension"} <= set(keys)
    assert any(k.startswith(("level1/1_", "level1/2_")) for k in keys)
    assert any(k.startswith("level1/") and "conv" in k for k in keys)
    assert any(k.startswith("level2/") and "Conv" in k for k in keys)
    assert (args.inputs, args.sample, args.repeat, args.baseline, args.baseline_commit) == ("kernelbench", 0.2, 1, None, None)
    assert bench.parse_args(["--store", "s", "--problems", "a/1_X, b/2_Y,"]).problems == ["a/1_X", "b/2_Y"]


@pytest.mark.parametrize("argv", [["--baseline", "x", "--baseline-commit", "abc"], ["--sample", "0"],
                                  ["--sample", "1.5"], ["--repeat", "0"], []])
def test_bad_options_are_refused(argv):
    with pytest.raises(SystemExit):
        bench.parse_args((["--store", "s"] if argv else []) + argv)


def test_help_needs_neither_kbm_nor_torch():
    done = subprocess.run([sys.executable, "-S", str(REPO / "bench" / "eval_throughput.py"), "--help"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "--baseline-commit" in done.stdout


def test_input_copy_lacks_the_slice_and_leaves_the_store_alone(tmp_path):
    make_store(tmp_path / "s.db").close()
    before = (tmp_path / "s.db").read_bytes()
    removed = bench.prepare_input(tmp_path / "s.db", tmp_path / "work" / "in.db", ["lv/1_A"])
    assert removed == {"cells_removed": 2, "checks_removed": 1}
    assert (tmp_path / "s.db").read_bytes() == before
    db = sqlite3.connect(tmp_path / "work" / "in.db")
    assert [r[0] for r in db.execute("select mutant from cells order by 1")] == ["x-lv/2_B", "y-lv/2_B"]
    assert [r[0] for r in db.execute("select input from input_checks")] == ["in-lv/2_B"]
    assert db.execute("select key, sample, full_rows from problems order by key").fetchall() == [
        ("lv/1_A", None, None), ("lv/2_B", 0.5, 0.25)]
    assert db.execute("select count(*) from mutants").fetchone()[0] == 4  # mutants and inputs stay


def test_input_copy_refuses_a_problem_without_mutants(tmp_path):
    make_store(tmp_path / "s.db").close()
    with pytest.raises(SystemExit, match="no mutants of lv/9_Z"):
        bench.prepare_input(tmp_path / "s.db", tmp_path / "in.db", ["lv/1_A", "lv/9_Z"])


def test_a_run_row_is_read_from_its_stats(tmp_path):
    make_store(tmp_path / "s.db").close()
    row = bench.run_row(tmp_path / "s.db", 0, "new", 0, 123.4, 0)
    assert (row["cells"], row["wall_s"], row["cells_per_s"], row["compared_bytes"]) == (4, 100.0, 0.0, 4e9)
    assert row["seconds"]["checking"] == 5.0 and row["stopped"] is False and row["process_s"] == 123.4
    assert bench.run_row(tmp_path / "s.db", 1, "new", 0, 1.0, 2)["error"].startswith("no evaluate run")


def test_the_baseline_borrows_the_new_runs_bytes_and_the_table_says_so():
    old = {"evaluator": "old", "rep": 0, "run": 5, "cells": 1000, "wall_s": 50.0, "process_s": 60.0,
           "cells_per_s": 20.0, "seconds": {**{k: v for k, v in SECONDS.items() if k != "checking"},
                                            "comparing": 15.0},
           "spares": {"starts": 71, "found_warm": 38, "warm_s_median": 4.78}}  # from before lending
    new = {"evaluator": "new", "rep": 0, "run": 5, "cells": 1000, "wall_s": 25.0, "process_s": 35.0,
           "cells_per_s": 40.0, "seconds": {**SECONDS, "crashed": 10.0, "other": 0.0}, "compared_bytes": 8e12,
           "outcomes": {"pass": 996, "crash": 3, "timeout": 1},
           "spares": {"starts": 98, "found_warm": 76, "borrowed": 9, "warm_s_median": 1.81}}
    rows = bench.with_floors([old, new], 4e12)
    assert rows[0]["bytes_borrowed"] and rows[0]["floor_s"] == 2.0 and rows[0]["compare_over_floor"] == 7.5
    assert "bytes_borrowed" not in rows[1] and rows[1]["compare_over_floor"] == 5.0
    assert rows[1]["share_not_launches"] == 0.4 and rows[1]["share_not_any_launch"] == 0.3
    assert rows[1]["share_crash_path"] == 0.1 and rows[1]["crashed_s_per_cell"] == 2.5
    text = bench.table(rows)
    lines = text.splitlines()
    labels = [line.split()[0] for line in lines[1:]]
    assert labels.index("checking") == labels.index("comparing") + 1 and labels[labels.index("not") - 1] == "other"
    assert [line for line in lines if line.startswith("  checking")][0].split()[1:] == ["-", "5.0%"]
    assert "7.50*" in text and "the baseline stores no bytes compared" in text
    assert [line for line in lines if line.startswith("  lent by")][0].split()[-2:] == ["-", "9"]
    assert [line for line in lines if line.startswith("  warm when")][0].split()[-2:] == ["38", "76"]
    last = bench.verdict_lines(rows, [], 4e12)
    assert last[1].startswith("new/old cells/s: 2.00x") and "5.00" in last[2] and "40.0%" in last[3]
    assert "the crash path (crashed, spares, building ahead, handover, rebuilding) 10.0%, the rest 30.0%" in last[3]
    assert [line for line in lines if line.startswith("  the rest")][0].split()[-1] == "30.0%"
    assert [line for line in lines if line.startswith("  crashed s per")][0].split()[-2:] == ["-", "2.50"]


def test_a_failed_run_shows_its_error_and_no_ratio():
    rows = bench.with_floors([{"evaluator": "old", "rep": 0, "error": "no evaluate run stored (see its log)"},
                              {"evaluator": "new", "rep": 0, "cells": 4, "cells_per_s": 1.0, "seconds": SECONDS}], None)
    assert "old #1: no evaluate run stored" in bench.table(rows)
    assert bench.verdict_lines(rows, [], None)[:2] == ["read bandwidth: not measured",
                                                       "new/old cells/s: - (a run is missing)"]


def test_cells_agree_to_fp32_rounding(tmp_path):
    make_store(tmp_path / "a.db", {"x-lv/1_A": 0.1, "y-lv/1_A": None, "x-lv/2_B": 0.3}).close()
    make_store(tmp_path / "b.db", {"x-lv/1_A": 0.1 * (1 + 5e-7), "y-lv/1_A": None, "x-lv/2_B": 0.3 * (1 + 1e-5)}).close()
    result = compare.compare_cells(tmp_path / "a.db", tmp_path / "b.db", rel=1e-6)
    assert result["cells"] == [4, 4] and result["equal"] == 3 and not result["only_first"]
    assert [(d["mutant"], d["name"], d["rule"], d["problem"]) for d in result["differing"]] == [
        ("x-lv/2_B", "x of lv/2_B", "rule-x", "lv/2_B")]
    assert compare.compare_cells(tmp_path / "a.db", tmp_path / "b.db", ["lv/1_A"], rel=1e-6)["differing"] == []
    assert len(compare.compare_cells(tmp_path / "a.db", tmp_path / "b.db")["differing"]) == 2  # exact by default
    line = bench.cells_line(result, 0)
    assert "3 equal" in line and "1 differ (0 in outcome)" in line and "x-lv/2_B x of lv/2_B (lv/2_B, 1)" in line


@pytest.mark.parametrize("a, b, same", [(None, None, True), (None, 0.0, False), (float("inf"), float("inf"), True),
                                        (float("inf"), 1e30, False), (0.0, 0.0, True), (1.0, 1.0 + 1e-7, True),
                                        (1.0, 1.0 + 1e-5, False)])
def test_margins(a, b, same):
    assert compare.same_margin(a, b, 1e-6) is same


def test_compare_command_names_mutants_and_exits_1_on_missing_cells(tmp_path, capsys):
    make_store(tmp_path / "a.db").close()
    make_store(tmp_path / "b.db", {"y-lv/1_A": 0.25}, problems=("lv/1_A",)).close()
    assert compare.main([str(tmp_path / "a.db"), str(tmp_path / "b.db")]) == 1
    printed = capsys.readouterr().out
    assert "only in first 2, only in second 0" in printed and "mutant y-lv/1_A y of lv/1_A (rule-y, lv/1_A)" in printed
    assert compare.main([str(tmp_path / "a.db"), str(tmp_path / "b.db"), "--problems", "lv/1_A"]) == 0


def test_without_cuda_it_refuses_in_one_line(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as e:
        bench.main(["--store", str(tmp_path / "s.db"), "--out", str(tmp_path / "out")])
    assert "needs a CUDA GPU" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_the_whole_bench_with_its_runs_faked(tmp_path, monkeypatch, capsys):
    """Both evaluators 'run' (a fake writes their cells into their copies), then the table and the comparison."""
    make_store(tmp_path / "s.db").close()
    old = tmp_path / "old"
    (old / "kbm_toolkit").mkdir(parents=True)
    (old / "kbm_toolkit" / "__init__.py").write_text("")
    calls = []

    def fake_run(checkout, command, log, timeout):
        name = "old" if checkout == old.resolve() else "new"
        calls.append(name)
        log.write_text(" ".join(command))
        store = Store(command[command.index("--store") + 1])
        run = store.start_run("evaluate", {"workers": 1})
        margin = 0.5 if name == "old" else 0.5 * (1 + 1e-3)  # one mutant differs beyond fp32 rounding
        store.record_cells(run, [{"mutant": "x-lv/1_A", "input": "in-lv/1_A", "outcome": "pass", "margin": margin},
                                 {"mutant": "y-lv/1_A", "input": "in-lv/1_A", "outcome": "pass", "margin": 0.5}])
        seconds = {k: v * (0.1 if name == "new" else 0.2) for k, v in SECONDS.items()}  # walls of 10 and 20 s
        store.finish_run(run, {"seconds": seconds, **({"compared_bytes": 2e12} if name == "new" else {})})
        store.close()
        return 12.0, 0

    monkeypatch.setattr(bench, "_cuda_or_exit", lambda: "sm_90")
    monkeypatch.setattr(bench, "read_bandwidth", lambda: 1e12)
    monkeypatch.setattr(bench, "crash_alone", lambda: 0.15)
    monkeypatch.setattr(bench, "check_import", lambda checkout: None)
    monkeypatch.setattr(bench, "slice_plan", lambda *a: [{"problem": "lv/1_A", "mutants": 2, "inputs": 1, "cells": 4}])
    monkeypatch.setattr(bench, "run_evaluator", fake_run)
    out, work = tmp_path / "out", tmp_path / "work"
    bench.main(["--store", str(tmp_path / "s.db"), "--baseline", str(old), "--problems", "lv/1_A", "--no-warm",
                "--repeat", "2", "--out", str(out), "--work", str(work)])
    assert calls == ["old", "new", "old", "new"]
    printed = capsys.readouterr().out
    assert "2 mutants x (1 inputs + probe) <=     4 cells  lv/1_A" in printed
    assert "new/old cells/s: 2.00x" in printed and "compare / floor: 0.50" in printed
    assert printed.count("1 differ (0 in outcome)") == 2 and "x-lv/1_A x of lv/1_A" in printed
    saved = json.loads((out / "runs.json").read_text())
    assert [r["evaluator"] for r in saved["runs"]] == ["old", "new", "old", "new"]
    assert saved["crash_alone_s"] == 0.15 and "a crash's error latency alone: 150 ms" in printed
    assert saved["runs"][0]["bytes_borrowed"] and saved["runs"][0]["compared_bytes"] == 2e12
    assert len(json.loads((out / "compare.json").read_text())) == 2
    # each evaluator gives the same cells run to run: the one that differs is a disagreement of the two
    assert "of the 1 cells old and new differ in, 0 were measured by the old evaluator after a write" in printed
    selves = json.loads((out / "self-compare.json").read_text())
    assert sorted(selves) == ["new", "old"] and all(not r["differing"] for r in selves.values())
    assert ("of the 1 cells old and new differ in, 0 also differ between two runs of one evaluator" in printed
            and "1 are the same run to run (0 in outcome: rule-x in lv/1_A 1)" in printed)
    assert (out / "table.txt").read_text().startswith(" ") and (out / "logs" / "r2-old.log").is_file()
    assert sqlite3.connect(tmp_path / "s.db").execute("select count(*) from cells").fetchone()[0] == 4


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_a_baseline_commit_becomes_a_worktree(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "kbm_toolkit").mkdir(parents=True)
    (repo / "kbm_toolkit" / "__init__.py").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setattr(bench, "REPO", repo)
    args = bench.parse_args(["--store", "s", "--baseline-commit", sha[:7], "--worktree", str(tmp_path / "old")])
    path = bench.baseline_checkout(args)
    assert path == (tmp_path / "old").resolve() and (path / "kbm_toolkit" / "__init__.py").is_file()
    assert bench.baseline_checkout(args) == path  # reused
    with pytest.raises(SystemExit, match="no worktree"):
        (tmp_path / "other").mkdir()
        bench.baseline_checkout(bench.parse_args(["--store", "s", "--baseline-commit", sha, "--worktree",
                                                  str(tmp_path / "other")]))


def test_the_split_per_problem_puts_the_slowest_comparing_first():
    row = {"evaluator": "new", "rep": 0, "problems": {
        "level1/19_ReLU": {"launches": 2.0, "comparing": 0.3, "compared_bytes": 1.2e12},
        "level1/23_Softmax": {"launches": 1.0, "comparing": 0.9, "crashed": 0.4, "compared_bytes": 1.2e12}}}
    lines = bench.problem_table(row, 4e12).splitlines()
    assert lines[1].split()[0] == "level1/23_Softmax" and lines[2].split()[0] == "level1/19_ReLU"
    assert lines[1].split()[-2:] == ["3.00", "-"] and lines[2].split()[-2:] == ["1.00", "-"]  # 0.9 s against 0.3 s
    row["problems"]["level1/23_Softmax"]["compare_gpu_s"] = 0.33  # the kernels' own time: 1.1 floors
    assert bench.problem_table(row, 4e12).splitlines()[1].split()[-2:] == ["3.00", "1.10"]
    assert bench.problem_table({"evaluator": "old", "rep": 0}, 4e12) == "old #1: no split per problem stored"


def test_the_split_per_problem_gives_each_problems_crashes_and_their_cost():
    row = {"evaluator": "new", "rep": 0, "problems": {
        "level1/40_LayerNorm": {"launches": 3.9, "crashed": 6.4, "crashes": 16, "crash_s_max": 1.25},
        "level1/19_ReLU": {"launches": 2.0, "comparing": 0.3}}}
    header, relu, layernorm = bench.problem_table(row, 4e12).splitlines()  # the slowest comparing first
    assert header.split()[6:10] == ["crashed", "crashes", "s/crash", "slowest"]
    assert layernorm.split()[3:6] == ["16", "0.40", "1.25"]  # 6.4 s over 16 crashes; the slowest 1.25 s
    assert relu.split()[3:6] == ["-", "-", "-"]  # no crash, or a run that stored no count


def test_compare_against_its_floor_is_also_given_on_the_large_comparisons_alone():
    problems = {"level1/19_ReLU": {"comparing": 0.6, "compared_bytes": 1.2e12, "compares": 100},  # 12 GB each
                "level1/23_Softmax": {"comparing": 0.3, "compared_bytes": 0.4e12, "compares": 100},  # 4 GB each
                "level1/1_Square": {"comparing": 5.0, "compared_bytes": 1e9, "compares": 100}}  # 10 MB each
    new = {"evaluator": "new", "rep": 0, "cells": 300, "cells_per_s": 30.0, "seconds": SECONDS,
           "compared_bytes": 1.601e12, "problems": problems}
    (row,) = bench.with_floors([new], 4e12)
    assert row["large_problems"] == ["level1/19_ReLU", "level1/23_Softmax"]
    assert row["large_compare_over_floor"] == 2.25  # 0.9 s against 1.6e12 B at 4e12 B/s; the small one left out
    assert "gpu_compare_over_floor" not in row and "large_gpu_compare_over_floor" not in row  # none stored
    assert "comparisons of >= 1 GB: 2.25 (goal <= 1.3; 19_ReLU, 23_Softmax)" in "\n".join(bench.verdict_lines([row], [], 4e12))
    assert bench.large_comparisons({"level1/1_Square": problems["level1/1_Square"]}, 4e12) == {}
    assert bench.large_comparisons({"x": {"comparing": 1.0, "compared_bytes": 5e9}}, 4e12) == {}  # no `compares` stored


def _cell(mutant: str, rule: str, outcome_differs: bool = False) -> dict:
    return {"mutant": mutant, "input": "i1", "rule": rule, "problem": "lv/1_A", "name": f"lv/1_A {rule}",
            "first": ["pass", 0.1], "second": ["pass", 0.2], "outcome_differs": outcome_differs}


def test_cells_that_differ_run_to_run_are_told_apart_from_a_disagreement_of_the_evaluators():
    result = {"differing": [_cell("m1", "sync-remove"), _cell("m2", "sync-remove", True), _cell("m3", "plus2minus", True),
                            _cell("m4", "lt2le")], "only_first": [], "only_second": [], "cells": [9, 9],
              "equal": 5, "rel": 1e-6}
    selves = {"old": {"differing": [_cell("m1", "sync-remove")], "only_first": [], "only_second": []},
              "new": {"differing": [], "only_first": [["m2", "i1"]], "only_second": []}}
    line = bench.stability_line(result, selves)
    assert line.startswith("of the 4 cells old and new differ in, 2 also differ between two runs of one evaluator "
                           "(old #1 vs #2: 1 cells and new #1 vs #2: 1 cells; the mutant's own nondeterminism: "
                           "sync-remove 2); 2 are the same run to run (1 in outcome: ")
    assert "plus2minus in lv/1_A 1" in line and "lt2le in lv/1_A 1" in line
    rows = [{"evaluator": "new", "rep": 0, "cells_per_s": 1.0}]
    assert bench.verdict_lines(rows, [result], None, selves)[-1] == line
    assert bench.verdict_lines(rows, [result], None)[-1].startswith("cells old vs new (#1)")  # one run each: no split


def test_cells_the_old_evaluator_measured_after_a_restored_write_are_told_apart(tmp_path):
    from kbm_toolkit.store.kill_matrix import RESTORED_NOTE

    store = make_store(tmp_path / "old.db")
    store.db.execute("update cells set note = ? where mutant = 'x-lv/1_A'", [RESTORED_NOTE])  # x wrote, y came after
    store.db.conn.commit()
    store.close()
    assert bench.restored_after(tmp_path / "old.db") == {("y-lv/1_A", "in-lv/1_A")}
    result = {"differing": [_cell("y-lv/1_A", "plus2minus") | {"input": "in-lv/1_A"}, _cell("m3", "lt2le"),
                            _cell("m4", "lt2le")],
              "old_suspects": [["y-lv/1_A", "in-lv/1_A"], ["z", "in-lv/1_A"]]}
    assert bench.suspects_line(result) == (
        "of the 3 cells old and new differ in, 1 were measured by the old evaluator after a write it restored from "
        "copies the write could reach (2 such cells in its run); the other 2 by rule: lt2le 2")


def test_new_args_reach_this_checkouts_evaluator_only():
    args = bench.parse_args(["--store", "s.db", "--new-args", "--spares 2"])
    new = bench.run_command(Path("n.db"), ["lv/1_A"], args, None, "new")
    old = bench.run_command(Path("o.db"), ["lv/1_A"], args, None, "old")
    assert new[-2:] == ["--spares", "2"] and old[-2:] == ["--workers", "1"] and new[:-2] == [*old[:4], "n.db", *old[5:]]


def test_the_comparison_kernels_own_gpu_time_is_set_against_the_floor_beside_the_charged_time():
    problems = {"level1/19_ReLU": {"comparing": 0.6, "compare_gpu_s": 0.33, "compared_bytes": 1.2e12, "compares": 100},
                "level1/1_Square": {"comparing": 5.0, "compare_gpu_s": 0.05, "compared_bytes": 0.4e12, "compares": 1e5}}
    new = {"evaluator": "new", "rep": 0, "cells": 300, "cells_per_s": 30.0, "seconds": SECONDS,
           "compared_bytes": 1.6e12, "problems": problems}
    (row,) = bench.with_floors([new], 4e12)  # a 0.4 s floor over all, 0.3 s on ReLU's large comparisons alone
    assert (row["compare_gpu_s"], row["gpu_compare_over_floor"], row["large_gpu_compare_over_floor"]) == (0.38, 0.95, 1.1)
    assert "new comparison kernels' GPU time / floor: 0.95" in "\n".join(bench.verdict_lines([row], [], 4e12))
    assert "its kernels' GPU time / floor" in bench.table([row])


def test_checking_is_set_against_one_read_of_each_storage_and_the_share_outside_launches_against_its_floor():
    seconds = {"wall": 100.0, "launches": 60.0, "crashed": 10.0, "comparing": 4.0, "checking": 6.0, "spares": 20.0}
    problems = {"level1/19_ReLU": {"compared_bytes": 8e12, "checked_bytes": 8e12, "check_gpu_s": 2.4},
                "level1/40_LayerNorm": {"checked_bytes": 4e12}}
    new = {"evaluator": "new", "rep": 0, "cells": 300, "cells_per_s": 30.0, "seconds": seconds,
           "compared_bytes": 8e12, "outcomes": {"pass": 280, "crash": 20}, "problems": problems}
    (row,) = bench.with_floors([new], 4e12, crash_alone_s=0.15)
    assert (row["checked_bytes"], row["check_floor_s"], row["check_over_floor"]) == (12e12, 3.0, 2.0)
    assert row["gpu_check_over_floor"] == 0.8
    # at its floor: compare 2 s, check 3 s, 20 crashes at 0.15 s = 8 s beside 60 s of launches
    assert row["outside_floor"] == round(8 / 68, 4)
    lines = bench.verdict_lines([row], [], 4e12, crash_alone_s=0.15)
    assert "new share outside launches at its floor: 11.8% (comparing and checking at one read of each tensor they read, " \
           "20 crashed cells at 150 ms each" in "\n".join(lines)
    table = bench.table([row])
    assert "not launches, every part at its floor" in table and "11.8%" in table
    # without a crash's latency measured, or with no bytes checked stored, there is no floor to give
    assert "outside_floor" not in bench.with_floors([new], 4e12)[0]
    assert "outside_floor" not in bench.with_floors([{**new, "problems": {}}], 4e12, 0.15)[0]
    assert not any("at its floor" in line for line in bench.verdict_lines(bench.with_floors([new], 4e12), [], 4e12))



def test_a_crash_that_cannot_be_timed_leaves_the_bench_without_a_floor_not_without_its_runs(
        tmp_path, monkeypatch, capsys):
    make_store(tmp_path / "s.db").close()
    ran = []

    def fake_run(checkout, command, log, timeout):
        ran.append(checkout)
        store = Store(command[command.index("--store") + 1])
        run = store.start_run("evaluate", {"workers": 1})
        store.record_cells(run, [{"mutant": "x-lv/1_A", "input": "in-lv/1_A", "outcome": "crash"}])
        store.finish_run(run, {"seconds": SECONDS, "compared_bytes": 2e12})
        store.close()
        return 12.0, 0

    def no_crash():
        raise RuntimeError("the out-of-bounds store did not fail: 'done 0.1'")

    monkeypatch.setattr(bench, "_cuda_or_exit", lambda: "sm_90")
    monkeypatch.setattr(bench, "read_bandwidth", lambda: 1e12)
    monkeypatch.setattr(bench, "crash_alone", no_crash)
    monkeypatch.setattr(bench, "check_import", lambda checkout: None)
    monkeypatch.setattr(bench, "slice_plan", lambda *a: [{"problem": "lv/1_A", "mutants": 2, "inputs": 1, "cells": 4}])
    monkeypatch.setattr(bench, "run_evaluator", fake_run)
    bench.main(["--store", str(tmp_path / "s.db"), "--problems", "lv/1_A", "--no-warm",
                "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")])
    printed = capsys.readouterr().out
    assert len(ran) == 1 and "new #1: 1 cells" in printed  # this checkout's run went ahead
    assert "a crash's error latency alone: not measured (the out-of-bounds store did not fail" in printed
    assert "new share outside launches at its floor" not in printed
    assert json.loads((tmp_path / "out" / "runs.json").read_text())["crash_alone_s"] is None
