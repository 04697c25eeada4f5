"""bench/plan_latency.py on the shipped demo store, from an empty cache (NVRTC, no GPU): each
variant plans every problem, and the last line is the ratio of the times it printed."""

from __future__ import annotations

import re
import sys

import pytest

from support import load_script

bench = load_script("bench/plan_latency.py")


def test_both_variants_plan_every_problem_and_the_ratio_is_theirs(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ready = bench._ready_times
    counted = []

    def counting(jobs: list, workers: int, part: int | None, arch: str) -> list[float]:
        times = ready(jobs, workers, part, arch)
        counted.append((part, len(times)))
        return times

    monkeypatch.setattr(bench, "_ready_times", counting)
    monkeypatch.setattr(sys, "argv", ["plan_latency.py", "--store", "@demo", "--problems", "2", "--workers", "1",
                                      "--consumers", "1"])
    bench.main()
    assert counted == [(None, 2), (16, 2)]  # every problem's plan, whole then in parts
    lines = capsys.readouterr().out.strip().splitlines()
    firsts = [float(re.search(r"first 1 +([\d.]+) s", line).group(1)) for line in lines[1:3]]
    assert lines[1].startswith("whole ") and lines[2].startswith("parts of 16 ")
    assert lines[-1].startswith(f"ratio, whole / parts: first 1 plans {firsts[0]:.1f} s / {firsts[1]:.1f} s = ")
