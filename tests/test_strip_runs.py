"""bench/strip_runs.py: a copy of a store without some runs' work, to time that work again."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from support import load_script

from kbm_toolkit.store import shipped_store_path
from kbm_toolkit.store import Store

REPO = Path(__file__).resolve().parent.parent


def strip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / "strip_runs.py"), *args],
                          capture_output=True, text=True)


def counts(path: Path) -> tuple[int, int, int]:
    db = sqlite3.connect(path)
    return (db.execute("select count(*) from cells where run = 2").fetchone()[0],
            db.execute("select count(*) from cells where run != 2").fetchone()[0],
            db.execute("select count(*) from mutants where status = 'crash_probe'").fetchone()[0])


def test_a_runs_cells_checks_and_quarantines_leave_the_copy_and_its_problems_start_again(tmp_path: Path) -> None:
    source = tmp_path / "demo.db"  # run 2 is its first evaluate run
    shutil.copyfile(shipped_store_path("demo"), source)
    writer = sqlite3.connect(source)  # the demo store keeps no probe cells: one quarantine of run 2's, by hand
    writer.execute("pragma journal_mode = wal")  # and left open, so the write stays in the -wal file, as in a live store
    mutant, problem = writer.execute("select id, problem from mutants where status = 'crash_probe'").fetchone()
    writer.execute("insert into inputs (id, problem, label) values ('p1', ?, 'probe')", [problem])
    writer.execute("insert into cells (mutant, input, outcome, run) values (?, 'p1', 'crash', 2)", [mutant])
    writer.commit()
    before = counts(source)
    out = tmp_path / "rerun.db"
    result = strip(str(source), "--runs", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"{before[0]:,} cells" in result.stdout
    after = counts(out)
    assert after[0] == 0 and after[1] == before[1] and after[2] == before[2] - 1
    assert counts(source) == before  # the source is untouched
    db = sqlite3.connect(out)
    assert db.execute("select count(*) from input_checks where run = 2").fetchone()[0] == 0
    store = Store(out, readonly=True)
    summary = store.sample_summary()
    assert summary is not None and summary["share"] == 0.0  # every problem run 2 touched, as before its first run
    writer.close()


def test_a_run_that_is_no_evaluation_or_an_existing_copy_is_one_line(tmp_path: Path) -> None:
    source = shipped_store_path("demo")
    result = strip(str(source), "--runs", "2-3", "--out", str(tmp_path / "x.db"))
    assert result.returncode == 2 and "not evaluate runs" in result.stderr and "3 (check)" in result.stderr
    assert not (tmp_path / "x.db").exists()
    (tmp_path / "y.db").write_bytes(b"")
    result = strip(str(source), "--runs", "2", "--out", str(tmp_path / "y.db"))
    assert result.returncode == 2 and "already exists" in result.stderr and "Traceback" not in result.stderr


def test_a_problem_whose_removed_work_begins_at_a_later_tenth_keeps_the_share_below_it(tmp_path: Path) -> None:
    tenth = load_script("bench/pool_wall_clock.py").tenth
    source = tmp_path / "demo.db"
    shutil.copyfile(shipped_store_path("demo"), source)
    db = sqlite3.connect(source)  # a later run that did only the 40% and wider tenths of one problem
    db.create_function("kbm_tenth", 1, tenth)
    db.execute("insert into runs (id, kind, started) values (99, 'evaluate', '2026-12-01T00:00:00+00:00')")
    moved = db.execute("update cells set run = 99 where kbm_tenth(mutant) >= 0.4 and mutant in "
                       "(select id from mutants where problem = 'demo/1_LeakyReLU')").rowcount
    db.execute("update problems set sample = 0.6, full_rows = 0.5 where key = 'demo/1_LeakyReLU'")
    db.commit()
    db.close()
    out = tmp_path / "rerun.db"
    result = strip(str(source), "--runs", "99", "--out", str(out))
    assert result.returncode == 0 and moved and f"{moved:,} cells" in result.stdout, result.stderr
    rows = dict(((k, (s, f)) for k, s, f in sqlite3.connect(out).execute("select key, sample, full_rows from problems")))
    assert rows.pop("demo/1_LeakyReLU") == (0.3, 0.3)  # evaluated, with full rows, up to the first removed tenth
    assert set(rows.values()) == {(None, None)}  # the problems it did not touch keep their whole pool
