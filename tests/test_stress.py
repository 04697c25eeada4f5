"""The memory-stress switch (`KBM_STRESS`): what it accepts, and that its kernels compile and
launch (the launch on a GPU only). That a run records it: test_evaluation."""

from __future__ import annotations

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
        [("float32", True), ("int64", False), ("int64", True), ("int64", False), ("int64", False)]
    assert [(p.dtype, p.pointer) for p in found["kbm_stress_stop"].params] == [("int64", True), ("int64", False)]


@pytest.mark.gpu
def test_a_stressed_launch_ends_with_its_stop_and_leaves_the_launch_its_stream() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    s = stress.MemoryStress()
    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    for _ in range(3):
        s.start()
        y = x * 2  # the launch under stress, on the current stream
        s.stop()
    torch.cuda.synchronize()  # returns only once every stress generation has seen its stop
    assert torch.equal(y, x * 2) and int(s._done.item()) == 3
    assert float(s._scratch.sum()) > 0  # the stress ran
