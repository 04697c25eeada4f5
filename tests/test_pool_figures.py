"""scripts/pool_figures.py: the pool figures docs/kernelbench-pool.md quotes beyond `kbm audit`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.store import shipped_store_path

REPO = Path(__file__).resolve().parent.parent


def figures(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "pool_figures.py"), *args],
                          capture_output=True, text=True)


def test_the_figures_agree_with_the_audit_of_the_same_store() -> None:
    store = str(shipped_store_path("demo"))
    result = figures("--store", store)
    assert result.returncode == 0, result.stderr
    # @demo, not its path: a store named by path is opened for writing, and this one is kbm's cached copy
    report = json.loads(CliRunner().invoke(cli, ["--store", "@demo", "audit", "-a", "kernelbench", "--json"]).output)
    first = re.match(r"kernelbench misses ([\d.]+)% of ([\d,]+) witnessed", result.stdout)
    assert first and int(first[2].replace(",", "")) == report["witnessed"]
    assert float(first[1]) == round(100 - report["detection_pct"], 1)
    problems = re.search(r"per problem \((\d+) with >= 5 witnessed\)", result.stdout)
    worst = re.findall(r"^  (\d+)% (\S+) \((\d+) witnessed\)$", result.stdout, re.M)
    assert problems and 0 < len(worst) <= min(10, int(problems[1]))
    assert [int(w[0]) for w in worst] == sorted((int(w[0]) for w in worst), reverse=True)
    assert all(int(n) >= 5 for _, _, n in worst)


def test_a_missing_store_is_one_line() -> None:
    result = figures("--store", "/nonexistent/kb.db")
    assert result.returncode == 2 and "no such store" in result.stderr and "Traceback" not in result.stderr
