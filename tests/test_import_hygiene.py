"""Parts that work from the store alone must not import CUDA (harlequin's import-hygiene test)."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEADLESS = ["kbm_toolkit.store", "kbm_toolkit.margin", "kbm_toolkit.cli", "kbm_toolkit.report_gate",
            "kbm_toolkit.problems", "kbm_toolkit.gate", "kbm_toolkit.inputs", "kbm_toolkit.score",
            "kbm_toolkit.report_audit", "kbm_toolkit.protocols", "kbm_toolkit.plugins",
            "kbm_toolkit.rules", "kbm_toolkit.mutation_run", "kbm_toolkit.evaluation_run",
            "kbm_toolkit.suite", "kbm_toolkit.targets", "kbm_toolkit.export", "kbm_toolkit.report_figures"]


@pytest.mark.parametrize("module", HEADLESS)
def test_module_does_not_import_cuda(module: str) -> None:
    code = (f"import sys, {module}\n"
            "bad = sorted(m for m in sys.modules if m == 'cuda' or m.startswith('cuda.'))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_store_does_not_import_torch() -> None:
    code = ("import sys, kbm_toolkit.store, kbm_toolkit.report_gate, kbm_toolkit.score, "
            "kbm_toolkit.report_audit; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
