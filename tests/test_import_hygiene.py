"""Parts that work from the store alone must not import CUDA (harlequin's import-hygiene test)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEADLESS = ["kbm_toolkit.store.store", "kbm_toolkit.cuda.comparison", "kbm_toolkit.cli", "kbm_toolkit.report.gate",
            "kbm_toolkit.problems.problem", "kbm_toolkit.evaluation.gate", "kbm_toolkit.problems.input_spec", "kbm_toolkit.analysis.score",
            "kbm_toolkit.report.audit", "kbm_toolkit.protocols.protocol", "kbm_toolkit.protocols.registry",
            "kbm_toolkit.mutation.rules", "kbm_toolkit.mutation.campaign", "kbm_toolkit.evaluation.run",
            "kbm_toolkit.analysis.suite", "kbm_toolkit.analysis.targets", "kbm_toolkit.report.stryker", "kbm_toolkit.report.figures"]


@pytest.mark.parametrize("module", HEADLESS)
def test_module_does_not_import_cuda(module: str) -> None:
    code = (f"import sys, {module}\n"
            "bad = sorted(m for m in sys.modules if m == 'cuda' or m.startswith('cuda.'))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_store_does_not_import_torch() -> None:
    code = ("import sys, kbm_toolkit.store.store, kbm_toolkit.report.gate, kbm_toolkit.analysis.score, "
            "kbm_toolkit.report.audit; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
