"""GPU tests: run with `pytest -m gpu` on a machine with a CUDA device (an H200 for the record)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbm_toolkit.errors import ContractViolation
from kbm_toolkit.execute import LoadedKernel
from kbm_toolkit.gate import run_gate
from kbm_toolkit.nvrtc import compile_source
from kbm_toolkit.problems import ProblemSet
from kbm_toolkit.runtime import device_arch
from kbm_toolkit.substrates import substrate_for

pytestmark = pytest.mark.gpu

DEMO = [p.key for p in ProblemSet.discover().select(level="demo")]


@pytest.mark.parametrize("key", DEMO)
def test_demo_substrate_passes_its_gate(demo: ProblemSet, key: str) -> None:
    problem = demo.get(key)
    substrate = substrate_for(problem)
    image = compile_source(substrate.source, device_arch())
    result = run_gate(problem, substrate, image)
    assert result.status == "passed", (result.message, [(r.label, r.outcome, r.margin) for r in result.rows])
    assert result.worst_margin is not None and result.worst_margin <= 1e-3


def test_unwritten_outputs_are_poisoned_and_fail(demo: ProblemSet, tmp_path: Path) -> None:
    # A kernel that writes nothing must fail the comparison, not pass on stale memory.
    problem = demo.get("demo/1")
    folder = tmp_path / "demo" / "1_LeakyReLU"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text('extern "C" __global__ void leaky_relu(const float* x, float* out, '
                                      'long long n, float s) {}\n')
    (folder / "launch.py").write_text((Path(substrate_for(problem).launcher_path)).read_text())
    substrate = substrate_for(problem, tmp_path)
    result = run_gate(problem, substrate, compile_source(substrate.source, device_arch()))
    assert result.status == "failed" and result.rows[0].outcome == "nonfinite"


def test_guard_holds_on_the_gpu(demo: ProblemSet, tmp_path: Path) -> None:
    problem = demo.get("demo/1")
    folder = tmp_path / "demo" / "1_LeakyReLU"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text(substrate_for(problem).source)
    (folder / "launch.py").write_text("import torch\n\ndef launch(k, model, x):\n    return torch.nn.functional.leaky_relu(x)\n")
    substrate = substrate_for(problem, tmp_path)
    kernel = LoadedKernel(substrate, compile_source(substrate.source, device_arch()))
    module = problem.load()
    with pytest.raises(ContractViolation):
        kernel(module.build_model("cuda"), module.inputs(1, "cuda"))


def test_inputs_are_built_on_the_gpu(demo: ProblemSet) -> None:
    (x,) = demo.get("demo/1").load().inputs(5, "cuda")
    assert x.is_cuda and x.dtype == torch.float32
