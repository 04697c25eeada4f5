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

    def fake(idle: int, hold_gb: float, sms: int, busy: int, busy_ms: float, crash: str) -> dict:
        asked.append((idle, hold_gb, busy))
        return {"idle": idle, "hold_gb": hold_gb, "busy": busy, "busy_ms": busy_ms,
                "error_ms": latency[(idle, hold_gb)], "report": "error"}

    monkeypatch.setattr(bench, "crash_latency", fake)
    bench.grid([0, 6], [0.0, 20.0], 132, tmp_path / "grid.json")
    assert asked == [(0, 0.0, 0), (0, 20.0, 0), (6, 0.0, 0), (6, 20.0, 0)]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "ratio, slowest crash (crash, 0 busy, 6 idle, 0 GB) / (crash, 0 busy, 0 idle, 0 GB): 310.0 / 140.0 ms = 2.21x"
    assert [r["error_ms"] for r in json.loads((tmp_path / "grid.json").read_text())] == [140.0, 150.0, 310.0, 290.0]


def test_a_busy_neighbour_is_an_outer_dimension_and_its_longest_launch_is_shown(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asked = []

    def fake(idle: int, hold_gb: float, sms: int, busy: int, busy_ms: float, crash: str) -> dict:
        asked.append((busy, idle))
        assert busy_ms == (5.0 if len(asked) < 3 else 50.0)
        row = {"idle": idle, "hold_gb": hold_gb, "busy": busy, "busy_ms": busy_ms,
               "error_ms": 150.0 + 250.0 * busy, "report": "error"}
        if busy:
            row.update(neighbour_launches=300, neighbour_median_ms=5.1, neighbour_longest_ms=212.5)
        return row

    monkeypatch.setattr(bench, "crash_latency", fake)
    bench.grid([0], [0.0], 132, None, (0, 1), (5.0, 50.0))
    assert asked == [(0, 0), (1, 0), (1, 0)]
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].split() == ["crash", "1", "50.0", "0", "0", "400.0ms", "5.1ms", "212.5ms"]
    assert lines[-4].split() == ["crash", "0", "-", "0", "0", "150.0ms", "-", "-"]
    assert lines[-1].endswith("400.0 / 150.0 ms = 2.67x")


def test_the_crashing_launch_is_the_outermost_dimension(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    asked = []

    def fake(idle: int, hold_gb: float, sms: int, busy: int, busy_ms: float, crash: str) -> dict:
        asked.append(crash)
        return {"crash": crash, "idle": idle, "hold_gb": hold_gb, "busy": busy, "busy_ms": busy_ms,
                "error_ms": {"crash": 150.0, "crash-spread": 900.0}[crash], "report": "error"}

    monkeypatch.setattr(bench, "crash_latency", fake)
    bench.grid([0], [0.0], 132, None, crashes=("crash", "crash-spread"))
    assert asked == ["crash", "crash-spread"]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("ratio, slowest crash (crash-spread, 0 busy") and last.endswith("900.0 / 150.0 ms = 6.00x")
    assert set(bench.CRASHES) == {"crash", "crash-wide", "crash-spread"}
    assert all(kernel in bench.KERNELS for kernel, _ in bench.CRASHES.values())
