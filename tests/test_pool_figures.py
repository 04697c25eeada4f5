"""dev/pool_figures.py: the pool figures docs/kernelbench-pool.md quotes beyond `kbm audit`."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.store import shipped_store_path

from support import REPO

SCRIPT = REPO / "dev" / "pool_figures.py"
pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="dev/ is in no sdist: test from a checkout")


def figures(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def demo_figures() -> tuple[str, dict]:
    """What the script prints for the shipped demo pool, and `kbm audit --json` of the same store."""
    result = figures("--store", str(shipped_store_path("demo")))
    assert result.returncode == 0, result.stderr
    # @demo, not its path: a store named by path is opened for writing, and this one is kbm's cached copy
    report = json.loads(CliRunner().invoke(cli, ["--store", "@demo", "audit", "-a", "kernelbench", "--json"]).output)
    return result.stdout, report


def test_the_headline_is_the_audit_of_the_same_store(demo_figures: tuple[str, dict]) -> None:
    out, report = demo_figures
    first = re.match(r"kernelbench misses ([\d.]+)% of ([\d,]+) witnessed \((\d+) problems left out; witnessed at 0.01 ", out)
    assert first, out
    assert int(first[2].replace(",", "")) == report["witnessed"]
    assert float(first[1]) == round(100 - report["detection_pct"], 1)
    assert int(first[3]) == len(report["excluded"])


def test_the_per_problem_figures_are_the_audits_problems(demo_figures: tuple[str, dict]) -> None:
    # the demo pool's 7 scored problems all fit in the audit's ten worst, so its rows are every problem's
    out, report = demo_figures
    rows = [p for p in report["worst_problems"] if p["witnessed"] >= 5]
    assert len(rows) < 10
    listed = re.findall(r"^  (\d+)% (\S+) \((\d+) witnessed\)$", out, re.M)
    assert {(key, int(n), int(rate)) for rate, key, n in listed} == \
        {(p["problem"], p["witnessed"], round(p["missed_pct"])) for p in rows}
    summary = re.search(r"per problem \((\d+) with >= 5 witnessed\): median ([\d.]+)%, (\d+) lose nothing", out)
    assert summary, out
    rates = [p["missed_pct"] for p in rows]
    assert int(summary[1]) == len(rows)
    assert float(summary[2]) == round(statistics.median(rates), 1)
    assert int(summary[3]) == sum(r == 0 for r in rates)


def test_a_missing_store_is_one_line() -> None:
    result = figures("--store", "/nonexistent/kb.db")
    assert result.returncode == 2 and "no such store" in result.stderr and "Traceback" not in result.stderr
