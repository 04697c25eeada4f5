"""The README's pack through the whole pipeline on a GPU: gate, mutate, run, audit and the TUI,
without a file of kbm's touched (`pytest -m gpu`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli

from support import REPO, write_pack

pytestmark = pytest.mark.gpu


def kbm(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def kbm_files() -> dict[str, int]:
    """kbm's own files (not Python's byte-code caches) and when each last changed."""
    return {str(p): p.stat().st_mtime_ns for folder in ("kbm_toolkit", "substrates", "problems", "adapters", "rules")
            for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_a_pack_goes_through_gate_mutate_run_audit_and_the_tui(tmp_path: Path) -> None:
    before = kbm_files()
    pack, store = write_pack(tmp_path / "mybench"), str(tmp_path / "s.db")
    common = ["--bench", str(pack), "--store", store]
    kbm(*common, "gate", "--level", "mybench")
    kbm(*common, "mutate", "--level", "mybench")
    kbm(*common, "run", "--inputs", "mybench", "--level", "mybench")
    report = json.loads(kbm(*common, "audit", "-a", "mybench", "--no-run", "--json"))
    assert report["judging"] == "allclose atol 1e-05 rtol 0.001, strict-fp32 reference"
    assert report["witnessed"] > 0 and report["detection_pct"] is not None
    assert report["excluded"] == {"mybench/level1/2_Scale": "the protocol excludes it (`exclude` in its protocol file)"}
    assert report["undecided"] == {"cells": 0, "checks": 0}  # new cells carry the protocol's own margin
    rules = json.loads(kbm(*common, "mutants", "--json"))
    assert any(m["rule"] == "relu-floor-one" for m in rules)

    from kbm_toolkit.protocols.registry import all_protocols
    from kbm_toolkit.tui.app import KbmApp, OverviewScreen

    async def drive() -> None:
        app = KbmApp(Path(store), all_protocols())
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            assert isinstance(app.screen, OverviewScreen)

    asyncio.run(drive())
    assert kbm_files() == before
