"""Every shipped substrate compiles with NVRTC and its launcher keeps the contract (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbm_toolkit.cuda.dryrun import dry_run
from kbm_toolkit.errors import ContractViolation, LaunchError, SubstrateError
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import Substrate, substrate_for, substrates_root
from kbm_toolkit.cuda.signatures import kernel_signatures

from support import KERNELBENCH


def _shipped() -> list[tuple[str, Path]]:
    root = substrates_root()
    return sorted((f"{d.parent.name}/{d.name}", d) for d in root.glob("*/*") if (d / "kernel.cu").is_file())


SHIPPED = _shipped()


def _problem_set_for(key: str) -> ProblemSet:
    return ProblemSet.discover(KERNELBENCH if not key.startswith("demo/") else None)


def test_every_demo_problem_has_a_substrate(demo: ProblemSet) -> None:
    for problem in demo.select(level="demo"):
        assert substrate_for(problem).kernel_path.is_file()


@pytest.mark.parametrize("key, folder", SHIPPED, ids=[k for k, _ in SHIPPED])
def test_substrate_compiles(key: str, folder: Path) -> None:
    substrate = Substrate(key, folder)
    image = compile_source(substrate.source, "sm_90", where=str(substrate.kernel_path))
    assert image.cubin and kernel_signatures(substrate)


@pytest.mark.parametrize("key, folder", SHIPPED, ids=[k for k, _ in SHIPPED])
def test_launcher_keeps_the_contract_at_every_gate_shape(key: str, folder: Path) -> None:
    if not key.startswith("demo/") and not (KERNELBENCH / "KernelBench").is_dir():
        pytest.skip("needs a KernelBench checkout")
    problem = _problem_set_for(key).get(key)
    substrate = substrate_for(problem)
    runs = [dry_run(problem, substrate, shape) for shape in [None, *substrate.gate_shapes]]
    assert all(run.launches for run in runs)
    # the reference runs on meta tensors at the default shape of every shipped problem (at a gate
    # shape it may not: then only the launcher is checked), and the output has its shape
    assert runs[0].reference_shape is not None
    compared = [run for run in runs if run.reference_shape is not None]
    assert [run.output_shape for run in compared] == [run.reference_shape for run in compared]


# -- the guard and the recorder catch what they must ------------------------------------------

KERNEL = """
extern "C" __global__ void copy(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}
"""


def _fake_substrate(tmp_path: Path, launcher: str) -> tuple:
    folder = tmp_path / "demo" / "1_LeakyReLU"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text(KERNEL)
    (folder / "launch.py").write_text(launcher)
    problem = ProblemSet.discover().get("demo/1_LeakyReLU")
    return problem, substrate_for(problem, tmp_path)


@pytest.mark.parametrize("body", [
    "out = x + 1",                     # arithmetic on a tensor
    "out = torch.relu(x)",             # a torch function
    "out = x.float() * 2",             # conversion then arithmetic
    "out = k.empty_like(x); out.copy_(x.sum())",  # a reduction hidden in a copy
])
def test_guard_rejects_torch_compute(tmp_path: Path, body: str) -> None:
    problem, substrate = _fake_substrate(tmp_path, f"import torch\n\ndef launch(k, model, x):\n    {body}\n    return out\n")
    with pytest.raises(ContractViolation, match="launcher computed with torch"):
        dry_run(problem, substrate)


def test_the_guard_leaves_torch_dynamo_unimported() -> None:
    import subprocess
    import sys

    # a worker's first guarded launch imported torch._dynamo: 4-5 s of each start on the H200 host
    code = ("import sys, torch\nfrom kbm_toolkit.cuda.launch_guard import guard\n"
            "with guard('here'):\n    torch.zeros(4).view(2, 2)\nprint('torch._dynamo' in sys.modules)\n")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_guard_allows_allocation_views_and_launches(tmp_path: Path) -> None:
    problem, substrate = _fake_substrate(tmp_path, (
        "def launch(k, model, x):\n"
        "    flat = x.contiguous().view(-1)\n"
        "    out = k.empty_like(flat)\n"
        "    k.copy(flat, out, flat.numel(), grid=k.cdiv(flat.numel(), 256), block=256)\n"
        "    return out.view(x.shape)\n"))
    assert dry_run(problem, substrate).launches[0].kernel == "copy"


@pytest.mark.parametrize("call, message", [
    ("k.copy(x, out, grid=1, block=256)", "takes 3 arguments, launcher gave 2"),
    ("k.copy(x, out, 1.5, grid=1, block=256)", "n is int64, got float"),
    ("k.copy(x, out.to(torch.float64), n, grid=1, block=256)", "launcher computed with torch"),
    ("k.copy(x.t(), out, n, grid=1, block=256)", "must be contiguous"),
    ("k.copy(x, out, n, grid=1, block=2048)", "block of 2048 threads"),
    ("k.copy(x, out, n, grid=(1, 70000), block=256)", "exceeds CUDA's limits"),
    ("k.nope(x, out, n, grid=1, block=256)", "no extern \"C\" __global__ kernel named 'nope'"),
])
def test_recorder_rejects_bad_launches(tmp_path: Path, call: str, message: str) -> None:
    problem, substrate = _fake_substrate(tmp_path, (
        "import torch\n\ndef launch(k, model, x):\n    out = k.empty_like(x)\n    n = x.numel()\n"
        f"    {call}\n    return out\n"))
    with pytest.raises((LaunchError, SubstrateError, AttributeError), match=message):
        dry_run(problem, substrate)


READS_VALUES = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rates = [x.item() for x in torch.linspace(0, 0.1, 3)]  # as Swin's drop-path schedule

    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""


def test_a_model_whose_constructor_reads_values_is_built_on_the_cpu_for_the_dry_run(tmp_path: Path) -> None:
    for level in ("level1", "level3"):
        (tmp_path / "kb" / "KernelBench" / level).mkdir(parents=True)
    (tmp_path / "kb" / "KernelBench" / "level3" / "1_ReadsValues.py").write_text(READS_VALUES)
    folder = tmp_path / "subs" / "level3" / "1_ReadsValues"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text(KERNEL)
    (folder / "launch.py").write_text(
        "def launch(k, model, x):\n    out = k.empty_like(x)\n"
        "    k.copy(x, out, x.numel(), grid=1, block=256)\n    return out\n")
    problem = ProblemSet.discover(tmp_path / "kb").get("level3/1")
    run = dry_run(problem, substrate_for(problem, tmp_path / "subs"))
    assert run.launches[0].kernel == "copy" and run.output_shape == run.reference_shape == (4, 8)


def test_wrong_output_shape_is_caught(tmp_path: Path) -> None:
    problem, substrate = _fake_substrate(tmp_path, (
        "def launch(k, model, x):\n    out = k.empty(x.shape[0])\n"
        "    k.copy(x, out, out.numel(), grid=1, block=256)\n    return out\n"))
    with pytest.raises(SubstrateError, match="reference is"):
        dry_run(problem, substrate)


def test_missing_substrate_says_where_it_looked(tmp_path: Path) -> None:
    problem = ProblemSet.discover().get("demo/1")
    with pytest.raises(SubstrateError, match="no substrate for demo/1_LeakyReLU"):
        substrate_for(problem, tmp_path)
