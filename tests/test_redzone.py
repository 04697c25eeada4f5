"""The redzone switch (`KBM_REDZONES`): what it accepts, that a buffer sits between two pads whose
writes `touched` counts (on the CPU; a kernel's stray write on a GPU only). That a run records
it: test_evaluation."""

from __future__ import annotations

import pytest

from kbm_toolkit.cuda import redzone
from kbm_toolkit.errors import OptionError

torch = pytest.importorskip("torch")


def test_the_switch_is_off_unless_set_to_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBM_REDZONES", raising=False)
    assert redzone.configured() is False
    monkeypatch.setenv("KBM_REDZONES", "0")
    assert redzone.configured() is False
    monkeypatch.setenv("KBM_REDZONES", "1")
    assert redzone.configured() is True
    monkeypatch.setenv("KBM_REDZONES", "yes")
    with pytest.raises(OptionError, match="KBM_REDZONES='yes': 1 pads every buffer"):
        redzone.configured()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_writes_inside_a_buffer_leave_its_redzones_and_one_past_either_end_does_not(dtype: torch.dtype) -> None:
    redzone.begin()
    buf = redzone.allocate((3, 5), dtype, "cpu")
    assert buf.shape == (3, 5) and buf.dtype == dtype and buf.is_contiguous()
    assert buf.data_ptr() % 256 == buf.untyped_storage().data_ptr() % 256  # the allocator's alignment kept
    buf.fill_(1)
    assert redzone.touched() == (0, 1)
    assert redzone.touched() == (0, 0)  # counted once: forgotten
    redzone.begin()
    buf = redzone.allocate((3, 5), dtype, "cpu")
    redzone._zones[0][redzone.ELEMENTS + buf.numel()] = 1  # out[n]: `i <= n` where `i < n` was meant
    assert redzone.touched() == (1, 1)
    before = redzone.allocate((7,), dtype, "cpu")
    redzone.allocate((2,), dtype, "cpu")
    redzone._zones[0][redzone.ELEMENTS - 1] = 1  # out[-1]
    assert before.numel() == 7 and redzone.touched() == (1, 2)


def test_a_launchers_outputs_come_from_padded_buffers_under_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.cuda.kernels import Kernels

    k = Kernels.__new__(Kernels)  # the allocation helpers only: no image, no GPU
    k._torch = torch
    monkeypatch.setenv("KBM_REDZONES", "1")
    redzone.begin()
    out = k.empty(4, 6, device="cpu")
    like = k.empty_like(torch.zeros(2, 3, dtype=torch.int32))
    assert torch.isnan(out).all() and out.shape == (4, 6)  # still poisoned
    assert like.dtype == torch.int32 and (like == torch.iinfo(torch.int32).min).all()
    assert redzone.touched() == (0, 2)
    monkeypatch.setenv("KBM_REDZONES", "0")
    redzone.begin()
    k.empty(4, 6, device="cpu")
    assert redzone._zones == []  # off: a plain allocation


@pytest.mark.gpu
def test_a_kernel_writing_one_past_its_output_is_seen_and_the_guarded_one_is_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from kbm_toolkit.cuda.kernels import Kernels, device_arch
    from kbm_toolkit.cuda.nvrtc import compile_source
    from kbm_toolkit.cuda.signatures import entry_points

    source = ('extern "C" __global__ void guarded(float* y, int n) {\n'
              "    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.0f; }\n"
              'extern "C" __global__ void one_past(float* y, int n) {\n'
              "    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i <= n) y[i] = 1.0f; }\n")
    k = Kernels(compile_source(source, device_arch(), where="zones.cu").cubin, entry_points(source, "zones.cu"),
                "zones.cu")
    monkeypatch.setenv("KBM_REDZONES", "1")
    for name, expected in (("guarded", 0), ("one_past", 1)):
        redzone.begin()
        y = k.empty(1000)
        getattr(k, name)(y, 1000, grid=4, block=256)
        assert redzone.touched() == (expected, 1) and bool((y == 1).all())
