"""The terminal UI, driven with Textual's pilot and pinned with SVG snapshots."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

textual = pytest.importorskip("textual")

from textual.widgets import DataTable  # noqa: E402

from kbm_toolkit.protocols.registry import load_protocol  # noqa: E402
from kbm_toolkit.problems.problem_set import ProblemSet  # noqa: E402
from kbm_toolkit.tui.app import KbmApp, MutantScreen, MutantsScreen, OverviewScreen, PatternsScreen, ProblemsScreen  # noqa: E402

from support import build  # noqa: E402
from support import seed  # noqa: E402

PROTOCOLS = [load_protocol("kernelbench"), load_protocol("kbv")]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """The hand-built matrix of test_score plus demo/1's real mutants, dated so snapshots are stable."""
    demo = ProblemSet.discover()
    store, _ = build(tmp_path / "tui.db", demo)
    seed(store, demo.get("demo/2"))
    store.db.execute("update runs set started = '2026-01-01T00:00:00+00:00'")
    store.db.conn.commit()
    store.close()
    return tmp_path / "tui.db"


async def _settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_every_screen_opens_and_goes_back(store_path: Path) -> None:
    asyncio.run(_drive_every_screen(store_path))


async def _drive_every_screen(store_path: Path) -> None:
    app = KbmApp(store_path, PROTOCOLS)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.screen.query_one(DataTable).row_count == 4  # arithmetic, semantic, precision, all

        await pilot.press("p")
        await _settle(pilot)
        assert isinstance(app.screen, PatternsScreen)
        assert app.screen.query_one(DataTable).row_count >= 2
        _, first = app.screen.patterns[0]
        await pilot.press("enter")
        await _settle(pilot)
        assert isinstance(app.screen, MutantsScreen)
        assert sorted(r["id"] for r in app.screen.rows) == sorted(first)
        await pilot.press("enter")
        await _settle(pilot)
        assert isinstance(app.screen, MutantScreen)
        assert app.screen.query_one(DataTable).row_count >= 1
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, PatternsScreen)
        await pilot.press("escape")  # once too often: a mode's own screen has nothing to go back to
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, PatternsScreen)

        await pilot.press("r")
        await _settle(pilot)
        assert isinstance(app.screen, ProblemsScreen)
        assert app.screen.query_one(DataTable).row_count == 2
        await pilot.press("slash", *"level:nope", "enter")
        await pilot.pause()
        assert app.screen.query_one(DataTable).row_count == 0
        await pilot.press("slash", *"demo/2", "enter")
        await pilot.pause()
        assert app.screen.query_one(DataTable).row_count == 1
        await pilot.press("t")
        await pilot.pause()
        assert str(app.screen.query_one("#summary").render()).startswith("kbv misses 0.0% of 4 mutants witnessed at 0.001 ")


def test_overview_snapshot(snap_compare, store_path: Path) -> None:
    """The overview: families as rows, missed % per protocol in colour, the summary line on top."""

    async def settle(pilot) -> None:
        await _settle(pilot)

    assert snap_compare(KbmApp(store_path, PROTOCOLS), terminal_size=(110, 24), run_before=settle)


def test_patterns_snapshot(snap_compare, store_path: Path) -> None:
    """Miss patterns: one column per protocol (● missed), counts and bars, most common first."""

    async def settle(pilot) -> None:
        await _settle(pilot)
        await pilot.press("p")
        await _settle(pilot)

    assert snap_compare(KbmApp(store_path, PROTOCOLS), terminal_size=(110, 24), run_before=settle)


def test_the_overview_says_when_the_store_is_a_sample(store_path: Path) -> None:
    from kbm_toolkit.store import Store

    store = Store(store_path)
    with store.db.conn:  # as a `kbm run --sample 0.5` on a fresh store would have left it
        store.db.execute("update problems set sample = 0.5 where key = 'demo/1_LeakyReLU'")
    store.close()
    asyncio.run(_summary_mentions_the_sample(store_path))


async def _summary_mentions_the_sample(store_path: Path) -> None:
    app = KbmApp(store_path, PROTOCOLS)
    async with app.run_test(size=(160, 40)) as pilot:
        await _settle(pilot)
        # the other problem was evaluated in full: the summary names both shares
        assert "Mutants: a 50–100% sample of each problem's (1 problem at 50%, 1 problem at 100%" in str(
            app.screen.query_one("#summary").render())


def test_the_submissions_mode_lists_each_protocols_verdict_and_opens_one(store_path: Path) -> None:
    asyncio.run(_drive_submissions(store_path))


def _with_submissions(store_path: Path) -> None:
    """Two submissions to demo/2 as `kbm verify` stores them: one right on every input, one wrong on
    the hidden x-1 config only (kbv rejects it, kernelbench accepts it)."""
    from kbm_toolkit.problems.submission import Submission
    from kbm_toolkit.store import Store

    store = Store(store_path)
    problem = ProblemSet.discover().get("demo/2")
    run = store.start_run("verify", {})
    for name, wrong in (("right.py", None), ("sign.py", "hidden x-1")):
        s = Submission(store_path.parent / name, problem, f"# {name}\nclass ModelNew: pass\n")
        store.record_submissions([s.row()])
        specs = {spec.id: spec for p in PROTOCOLS for spec in p.specs(problem)}
        store.record_inputs(list(specs.values()), "verify")
        store.record_submission_cells(run, [
            {"submission": s.id, "input": i, "outcome": "pass", "margin": 0.5 if wrong and wrong in spec.label else 0.0,
             "max_abs": 0.0, "margins": {p.judge.key: 0.5 if wrong and wrong in spec.label else 0.0 for p in PROTOCOLS}}
            for i, spec in specs.items()])
    store.close()


async def _drive_submissions(store_path: Path) -> None:
    from kbm_toolkit.tui.app import SubmissionScreen, SubmissionsScreen

    _with_submissions(store_path)
    app = KbmApp(store_path, PROTOCOLS)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        await pilot.press("s")
        await _settle(pilot)
        assert isinstance(app.screen, SubmissionsScreen)
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(k)] for k in range(table.row_count)]
        assert rows == [["demo/2_Softmax", "right.py", "accepts", "accepts"],
                        ["demo/2_Softmax", "sign.py", "accepts", "rejects"]]
        await pilot.press("down", "enter")
        await _settle(pilot)
        assert isinstance(app.screen, SubmissionScreen)
        detail = app.screen.query_one(DataTable)
        failing = [[str(c) for c in detail.get_row_at(k)] for k in range(detail.row_count)
                   if str(detail.get_row_at(k)[3]) == "fail"]
        assert [(r[2], r[4]) for r in failing] == [("hidden x-1", "5.00e-01")]
        await pilot.press("escape")
        assert isinstance(app.screen, SubmissionsScreen)
