"""The official check's miss rate asked of the shipped KernelBench store five ways (the audit, the
TUI's data, the report's tables, the Stryker export, the suite's baseline): one number, or the
reason it differs printed beside the figure."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from kbm_toolkit.analysis.overview import overview
from kbm_toolkit.analysis.score import audit_store
from kbm_toolkit.analysis.suite import suite_curve
from kbm_toolkit.protocols.registry import all_protocols, load_protocol
from kbm_toolkit.report.stryker import stryker_report
from kbm_toolkit.report.tables import tables_markdown
from kbm_toolkit.store import Store, shipped_store_path
from kbm_toolkit.vocabulary import Accounting

OFFICIAL = load_protocol("kernelbench")
EVERYONE = all_protocols()


@pytest.fixture(scope="module")
def store() -> Store:
    return Store(shipped_store_path("kernelbench"), readonly=True)


@pytest.fixture(scope="module", params=list(Accounting))
def asked(request: pytest.FixtureRequest, store: Store) -> tuple[Accounting, dict[str, Any]]:
    """The audit under each accounting: what every other view must repeat."""
    return request.param, audit_store(store, OFFICIAL, EVERYONE, accounting=request.param)


def test_the_two_accountings_give_two_numbers(store: Store) -> None:
    # the paper's counts a mutant only 1e-3 or 1e-4 inputs show as no miss of a 1e-2 check
    paper = audit_store(store, OFFICIAL, EVERYONE)
    union = audit_store(store, OFFICIAL, EVERYONE, accounting=Accounting.UNION)
    assert paper["witnessed"] < union["witnessed"] and paper["missed"] < union["missed"]
    assert paper["denominator_words"].startswith(f"{paper['witnessed']:,} mutants witnessed at 0.01 by any of ")


def test_the_tui_scores_as_the_audit(store: Store, asked: tuple[Accounting, dict[str, Any]]) -> None:
    accounting, report = asked
    data = overview(store, [OFFICIAL, load_protocol("kbv")], accounting, EVERYONE)
    assert data.score("kernelbench") == (report["witnessed"], report["missed"])
    assert data.score_words("kernelbench") == \
        f"kernelbench misses {100 - report['detection_pct']:.1f}% of {report['denominator_words']}"
    all_row = data.family_table()[-1]
    assert all_row[0] == "all" and all_row[1][0] == (report["witnessed"], pytest.approx(100 - report["detection_pct"]))


def test_the_tables_score_as_the_audit(store: Store, asked: tuple[Accounting, dict[str, Any]]) -> None:
    accounting, report = asked
    text = tables_markdown(store, [OFFICIAL], EVERYONE, accounting=accounting)
    assert f"| of which {report['witnessed_as']} | {report['witnessed']:,} |" in text
    assert f"| witnessed, missed by kernelbench | {report['missed']:,} |" in text
    table2 = text.split("Table 2")[1]
    assert re.search(rf"\| all \| \d+ \| {100 - report['detection_pct']:.1f}% of {report['witnessed']:,} \|", table2)


def test_the_export_scores_as_the_audit(store: Store, asked: tuple[Accounting, dict[str, Any]]) -> None:
    accounting, report = asked
    export = stryker_report(store, OFFICIAL, EVERYONE, accounting)
    statuses = Counter(m["status"] for f in export["files"].values() for m in f["mutants"])
    # the viewer's score is Killed / (Killed + Survived): the audit's detection
    assert (statuses["Killed"] + statuses["Survived"], statuses["Survived"]) == (report["witnessed"], report["missed"])
    assert export["config"]["denominator"] == report["denominator_words"]


def test_the_suite_says_why_its_baseline_is_not_the_audits(store: Store) -> None:
    report = audit_store(store, OFFICIAL, EVERYONE)
    curve = suite_curve(store, 2, OFFICIAL.tolerance, OFFICIAL, splits=0)
    # over the mutants with full rows, witnessed by any stored input: another set, another figure
    assert curve.witnessed < report["witnessed"]
    assert round(curve.baseline_full, 1) != round(report["detection_pct"], 1)
    words = curve.denominator_words(OFFICIAL.tolerance, "kernelbench")
    assert words.startswith(f"{curve.witnessed:,} mutants over ") and "not over its audit's denominator" in words
