from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import Store

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
KERNELBENCH = Path(os.environ.get("KBM_KERNELBENCH", REPO / "third_party" / "KernelBench"))


def load_script(relative: str) -> ModuleType:
    """A repository script (`scripts/...`, `bench/...`) imported as a module, for its functions."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
