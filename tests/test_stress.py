"""Memory stress beside a launch (`cuda.stress`): the input specs that ask for it, the protocol
that lists them, and that its kernels compile and launch (the launch on a GPU only)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kbm_toolkit.cuda import stress


def test_only_an_input_that_names_a_stress_is_stressed() -> None:
    assert stress.around_launch("") is None


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


def test_a_spec_that_names_a_stress_is_another_input_with_the_same_tensors() -> None:
    from kbm_toolkit.errors import KbmError
    from kbm_toolkit.problems.input_spec import InputSpec
    from kbm_toolkit.problems.problem_set import ProblemSet

    plain = InputSpec.make("demo/1_LeakyReLU", 42, label="official")
    stressed = InputSpec.make("demo/1_LeakyReLU", 42, stress="memory", label="official, stressed")
    assert "stress" not in plain.record()  # every spec that names none keeps its id
    assert stressed.record() == {**plain.record(), "stress": "memory"} and stressed.id != plain.id
    assert InputSpec.from_record(stressed.record()) == stressed
    problem = ProblemSet.discover().get("demo/1")
    assert (stressed.model_key(problem), stressed.seed, stressed.base) == (plain.model_key(problem), plain.seed, plain.base)
    with pytest.raises(KbmError, match="stress must be one of memory, got 'heat'"):
        InputSpec.make("demo/1_LeakyReLU", 42, stress="heat")


def test_kernelbench_stress_is_the_official_trials_then_the_same_trials_stressed(demo: Any) -> None:
    from kbm_toolkit.protocols.registry import load_protocol

    problem = demo.get("demo/1")
    specs = load_protocol("kernelbench-stress").specs(problem)
    official = load_protocol("kernelbench").specs(problem)
    assert [s.id for s in specs[:5]] == [s.id for s in official]  # their cells are the official check's
    assert [s.stress for s in specs[5:]] == ["memory"] * 5
    assert [s.seed for s in specs[5:]] == [s.seed for s in official]
    assert load_protocol("kernelbench-stress").tolerance == load_protocol("kernelbench").tolerance


def test_a_protocol_naming_an_unknown_stress_is_one_line_with_its_file(tmp_path: Any) -> None:
    from kbm_toolkit.protocols.protocol import ProtocolError, load_protocols

    (tmp_path / "protocol.toml").write_text('[protocol]\nname = "hot"\ndescription = "d"\ntolerance = 1e-2\n\n'
                                            '[[inputs]]\ntrials = 2\nstress = "heat"\n')
    with pytest.raises(ProtocolError, match="inputs #1: stress must be one of memory, got 'heat'") as e:
        load_protocols(tmp_path)
    assert "protocol.toml" in e.value.line()


class _Doubling:
    """A stand-in for a mutant's loaded kernel: its launch doubles the first input."""

    def preload(self) -> None:
        self.preloaded = True

    def enqueue(self, model: Any, inputs: list) -> Any:
        return inputs[0] * 2


def test_off_the_gpu_a_stressed_input_launches_without_the_stress(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from kbm_toolkit.evaluation import cell_task

    made: list = []
    monkeypatch.setattr(cell_task, "around_launch", lambda kind="": made.append(kind))
    built = type("B", (), {"model": None, "inputs": [torch.ones(4)]})()
    out = cell_task._Timed(False, "memory").enqueue(_Doubling(), built)
    assert torch.equal(out, torch.full((4,), 2.0)) and made == []  # kbm verify's CPU path: nothing to stress


@pytest.mark.gpu
def test_a_stressed_inputs_launch_runs_beside_the_stress_and_a_plain_ones_does_not() -> None:
    torch = _gpu()
    from kbm_toolkit.evaluation import cell_task

    built = type("B", (), {"model": None, "inputs": [torch.arange(1 << 20, dtype=torch.float32, device="cuda")]})()
    kernel = _Doubling()
    cell_task._Timed(True, "").enqueue(kernel, built)
    assert not hasattr(kernel, "preloaded")  # no stress asked: the launch as it always was
    out = cell_task._Timed(True, "memory").enqueue(kernel, built)
    s = stress.around_launch("memory")
    assert kernel.preloaded and s is not None and s._gen >= 1 and s.fused() == 0
    assert int(s._done.item()) == s._gen  # the stress ended by its stop, behind the launch
    assert torch.equal(out, built.inputs[0] * 2)
