"""bench/first_kill_replay.py: `--first-kill`'s claim, replayed on a store with full rows."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from kbm_toolkit.store import shipped_store_path

REPO = Path(__file__).resolve().parent.parent


def test_replaying_first_kill_on_a_live_wal_store_keeps_every_audit(tmp_path: Path) -> None:
    source = tmp_path / "demo.db"
    shutil.copyfile(shipped_store_path("demo"), source)
    live = sqlite3.connect(source)  # a store in use: WAL, with a write not yet checkpointed into the file
    live.execute("pragma journal_mode = wal")
    live.execute("delete from cells where mutant in (select id from mutants where problem = 'demo/4_Matmul')")
    live.commit()
    result = subprocess.run([sys.executable, str(REPO / "bench" / "first_kill_replay.py"), "--store", str(source)],
                            capture_output=True, text=True)
    live.close()
    assert result.returncode == 0, result.stderr
    assert "first-kill keeps" in result.stdout and "every audit is the same" in result.stdout


def test_the_replay_leaves_the_store_it_reads_as_it_was(tmp_path: Path) -> None:
    source = tmp_path / "demo.db"
    shutil.copyfile(shipped_store_path("demo"), source)
    sqlite3.connect(source).execute("pragma journal_mode = delete").close()  # as kbm unpacks a shipped store
    before = source.read_bytes()
    result = subprocess.run([sys.executable, str(REPO / "bench" / "first_kill_replay.py"), "--store", str(source)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert source.read_bytes() == before  # opened read-only: not migrated, not switched to WAL
