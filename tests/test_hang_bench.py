"""bench/hang_recovery.py's crash-latency grid without a GPU: its cells in order, its table and
its last line, with each crash faked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import load_script

bench = load_script("bench/hang_recovery.py")


def test_the_grid_crashes_once_per_cell_and_ends_with_the_slowest_over_the_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    latency = {(0, 0.0): 140.0, (0, 20.0): 150.0, (6, 0.0): 310.0, (6, 20.0): 290.0}
    asked = []

    def fake(idle: int, hold_gb: float, sms: int) -> dict:
        asked.append((idle, hold_gb))
        return {"idle": idle, "hold_gb": hold_gb, "error_ms": latency[(idle, hold_gb)], "report": "error"}

    monkeypatch.setattr(bench, "crash_latency", fake)
    bench.grid([0, 6], [0.0, 20.0], 132, tmp_path / "grid.json")
    assert asked == [(0, 0.0), (0, 20.0), (6, 0.0), (6, 20.0)]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "ratio, slowest crash (6 idle, 0 GB) / (0 idle, 0 GB): 310.0 / 140.0 ms = 2.21x"
    assert [r["error_ms"] for r in json.loads((tmp_path / "grid.json").read_text())] == [140.0, 150.0, 310.0, 290.0]
