"""The memory-stress switch (`KBM_STRESS`): what it accepts, and that its kernels compile and
launch (the launch on a GPU only). That a run records it: test_evaluation."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kbm_toolkit.cuda import stress
from kbm_toolkit.errors import OptionError


def test_the_switch_is_off_unless_set_and_names_a_known_stress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBM_STRESS", raising=False)
    assert stress.configured() is None and stress.around_launch() is None
    monkeypatch.setenv("KBM_STRESS", "memory")
    assert stress.configured() == "memory"
    monkeypatch.setenv("KBM_STRESS", "cache")
    with pytest.raises(OptionError, match="KBM_STRESS='cache': known stresses are memory"):
        stress.configured()


def test_the_stress_kernels_compile_with_the_signatures_the_launches_use() -> None:
    pytest.importorskip("cuda.core")
    from kbm_toolkit.cuda.nvrtc import compile_source
    from kbm_toolkit.cuda.signatures import entry_points

    assert compile_source(stress.SOURCE, "sm_90", where=stress.WHERE).cubin
    found = entry_points(stress.SOURCE, stress.WHERE)
    assert [(p.dtype, p.pointer) for p in found["kbm_stress"].params] == \
        [("float32", True), ("int64", False), ("int64", True), ("int64", False), ("int64", False), ("int32", True)]
    assert [(p.dtype, p.pointer) for p in found["kbm_stress_stop"].params] == [("int64", True), ("int64", False)]


def _gpu() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return torch


@pytest.mark.gpu
def test_a_stressed_launch_ends_with_its_stop_and_leaves_the_launch_its_stream() -> None:
    torch = _gpu()
    s = stress.MemoryStress()
    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    for _ in range(3):
        s.start()
        y = x * 2  # the launch under stress, on the current stream
        s.stop()
    assert s.fused() == 0  # every generation ended by its stop, none by the fuse
    assert torch.equal(y, x * 2) and int(s._done.item()) == 3
    assert float(s._scratch.sum()) > 0  # the stress ran


@pytest.mark.gpu
def test_a_mutants_first_launch_under_stress_is_not_held_up_once_preloaded() -> None:
    # A mutant's image is new to the worker: its first launch would load it lazily, and the load
    # waited for the stress to end (the first race-stress run timed every mutant out).
    torch = _gpu()
    from kbm_toolkit.cuda.kernels import Kernels, device_arch
    from kbm_toolkit.cuda.nvrtc import compile_source
    from kbm_toolkit.cuda.signatures import entry_points

    s = stress.MemoryStress()
    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    for n in range(2):  # a new image each time, as each mutant is
        source = (f'extern "C" __global__ void twice_{n}(const float* x, float* y, int n) {{\n'
                  "    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }\n")
        image = compile_source(source, device_arch(), where=f"twice_{n}.cu")
        k = Kernels(image.cubin, entry_points(source, f"twice_{n}.cu"), f"twice_{n}.cu")
        k.preload()
        y = torch.empty_like(x)
        began = time.perf_counter()
        s.start()
        getattr(k, f"twice_{n}")(x, y, x.numel(), grid=(x.numel() + 255) // 256, block=256)
        s.stop()
        torch.cuda.synchronize()
        assert time.perf_counter() - began < stress.FUSE_NS / 2e9  # well inside the fuse
        assert torch.equal(y, x * 2)
    assert s.fused() == 0
