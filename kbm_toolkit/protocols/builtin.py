"""The adapters that ship with kbm, registered under `kbm.adapters` like any third-party one."""

from __future__ import annotations

from pathlib import Path

from kbm_toolkit.paths import data_dir


def kernelbench() -> Path:
    """KernelBench's official check (and its `kernelbench-head` variant)."""
    return data_dir("adapters") / "kernelbench"


def kbv() -> Path:
    """KernelBench-Verified's hidden tests."""
    return data_dir("adapters") / "kbv"


def fuzz() -> Path:
    """The log-uniform fuzzing protocol (and its `fuzz-shapes` variant)."""
    return data_dir("adapters") / "fuzz"


def stress() -> Path:
    """The official trials again beside memory stress (`kernelbench-stress`): races a quiet GPU hides."""
    return data_dir("adapters") / "stress"


def probe() -> Path:
    """kbm's screening input as a protocol (`probe`): its kills are witnesses like any input's."""
    return data_dir("adapters") / "probe"
