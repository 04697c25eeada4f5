from __future__ import annotations

from pathlib import Path

import pytest

from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import Store

from support import KERNELBENCH



def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu = _has_gpu()
    kb = (KERNELBENCH / "KernelBench" / "level1").is_dir() or (KERNELBENCH / "level1").is_dir()
    for item in items:  # markers, not keywords: a test parametrized with the protocol "kernelbench" needs no checkout
        if item.get_closest_marker("gpu") and not gpu:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))
        if item.get_closest_marker("kernelbench") and not kb:
            item.add_marker(pytest.mark.skip(reason=f"needs a KernelBench checkout at {KERNELBENCH}"))


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own store out of tests; share one compile cache across the session."""
    monkeypatch.setenv("KBM_STORE", str(tmp_path_factory.getbasetemp() / "user-store.db"))
    monkeypatch.setenv("KBM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.delenv("KBM_KERNELBENCH", raising=False)
    monkeypatch.delenv("KBM_KBV", raising=False)  # kbv is the reconstruction unless a test names a checkout
    monkeypatch.setenv("KBM_BENCH", "")  # set, so that what `--bench` adds to it is undone after each test


@pytest.fixture
def fresh_store() -> Store:
    store = Store(":memory:")
    yield store
    store.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "kbm.db"


@pytest.fixture(scope="session")
def demo() -> ProblemSet:
    return ProblemSet.discover()


@pytest.fixture
def kernelbench_problems() -> ProblemSet:
    return ProblemSet.discover(KERNELBENCH)
