"""Checksums that tell a mutant's stray writes (`kbm_toolkit.cuda.checksum`), and the evaluator's
use of them: a writer's cell stands, and no later cell runs on what it wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbm_toolkit.cuda.checksum import SOURCE, Watch, host_checksum, storages
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.cuda.signatures import entry_points
from kbm_toolkit.evaluation.cell_task import After

HAS_GPU = torch.cuda.is_available()


def test_the_checksum_kernel_compiles_for_the_h200() -> None:
    assert compile_source(SOURCE, "sm_90", where="kbm_checksum.cu", use_cache=False).cubin
    assert [p.dtype for p in entry_points(SOURCE)["kbm_checksums"].params] == ["int64", "int64"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8, torch.float16])
def test_a_changed_or_moved_word_changes_the_checksum(dtype: torch.dtype) -> None:
    x = torch.arange(37).to(dtype)
    before = host_checksum(x)
    assert host_checksum(x.clone()) == before  # bits, not identity
    x[5] += 1
    assert host_checksum(x) != before
    x[5] -= 1
    assert host_checksum(x) == before
    words = x.view(torch.uint8)[:16].view(torch.int64)  # two 8-byte words swapped: same bytes, other places
    words[[0, 1]] = words[[1, 0]].clone()
    assert host_checksum(x) != before


def test_a_view_is_checked_over_its_whole_storage() -> None:
    x = torch.zeros(64)
    view = x[8:16]
    before = host_checksum(view)
    x[40] = 1.0  # outside the view, inside what a stray write reaches
    assert host_checksum(view) != before
    assert storages([x, view, x.view(8, 8).T]) == [(x.untyped_storage().data_ptr(), 256)]  # one storage, summed once


def test_a_watch_sees_a_write_and_only_a_write() -> None:
    a, b = torch.randn(10), torch.randint(0, 9, (3,))
    watch = Watch([a, b, a[2:]])
    assert len(watch.sums) == 2 and not watch.changed()
    b[1] = 100
    assert watch.changed()


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA device")
@pytest.mark.parametrize("nbytes", [1, 7, 8, 9, 15, 16, 17, 24, 1000, (1 << 20) + 3, (1 << 26) + 12])
def test_the_kernel_sums_what_the_host_sums(nbytes: int) -> None:
    x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda")
    watch = Watch([x])
    assert watch.sums == [host_checksum(x.cpu())]
    x[nbytes // 2] ^= 1
    assert watch.changed() and watch.take() == [host_checksum(x.cpu())]


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA device")
def test_one_launch_checks_many_storages() -> None:
    tensors = [torch.randn(n, device="cuda") for n in (3, 1024, 1 << 20, 5)]
    watch = Watch(tensors)
    assert watch.sums == [host_checksum(t.cpu()) for t in tensors]
    tensors[2][12345] = 0.5
    now = watch.take()
    assert [a == b for a, b in zip(now, watch.sums)] == [True, True, False, True]


def _writer_rules() -> list:
    from kbm_toolkit.mutation.rules import _parse, load_rules

    write_input = _parse({"name": "write-input", "family": "indexing", "description": "zero its input after reading it",
                          "pattern": r"out\[i\] = v > 0\.0f", "replacement": "((float*)x)[i] = 0.0f; out[i] = v > 0.0f"},
                         Path("t.toml"), 0)
    return [write_input, *[r for r in load_rules() if r.name in ("mul2div", "plus2minus")]]


def _evaluate(tmp_path: Path, name: str, rules: list) -> tuple[dict, object]:
    from kbm_toolkit.cuda.kernels import device_arch
    from kbm_toolkit.evaluation.input_sources import official_specs
    from kbm_toolkit.evaluation.options import RunOptions
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.mutation.campaign import mutate_problems
    from kbm_toolkit.problems.problem_set import ProblemSet
    from kbm_toolkit.store import Store

    problem = ProblemSet.discover().get("demo/1")
    store = Store(tmp_path / f"{name}.db")
    mutate_problems(store, [problem], device_arch(), workers=2, require_gate=False, rules=rules)
    summary = run_evaluation(store, [problem], official_specs, "official", device_arch(), {"gpu": "test"},
                             RunOptions(rules=rules, probe=False))
    assert summary.problems == {problem.key: "done"}
    rules_of = {r["id"]: r["rule"] for r in store.db["mutants"].rows}
    return {(rules_of[r["mutant"]], r["mutant"], r["input"]): (r["outcome"], r["margin"], r["note"])
            for r in store.db["cells"].rows}, summary


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA device")
def test_a_writer_is_noted_and_no_later_cell_sees_what_it_wrote(tmp_path: Path) -> None:
    from kbm_toolkit.evaluation.cell_task import OVERWRITE_NOTE

    rules = _writer_rules()
    with_writer, summary = _evaluate(tmp_path, "with", rules)
    without, _ = _evaluate(tmp_path, "without", rules[1:])
    written = {k: v for k, v in with_writer.items() if k[0] == "write-input"}
    assert len(written) == 5 and all(note == OVERWRITE_NOTE for _, _, note in written.values())
    assert all(outcome == "pass" for outcome, _, _ in written.values())  # it read its input before zeroing it
    crashes = sum(outcome == "crash" for outcome, _, _ in with_writer.values())
    assert summary.restarts == crashes  # no write cost one: its input was built again, and trusted, in its worker
    rest = {k: v for k, v in with_writer.items() if k[0] != "write-input"}
    assert rest == without  # every other cell as if the writer had never run


def _cells_task(kernel) -> object:
    """A cell task reduced to what `_launch` uses, its mutant `m` bound to `kernel` (CPU tensors)."""
    from kbm_toolkit.evaluation.cell_task import _CellTask

    class Queued:  # as `LoadedKernel.enqueue` is called
        def enqueue(self, model, inputs):
            return kernel(model, inputs)

    task = object.__new__(_CellTask)
    task.margins, task.references, task.kernels = [("strict-fp32", "output", 1.0)], [], {"m": Queued()}
    return task


def _built() -> object:
    from kbm_toolkit.evaluation.cell_task import Built

    x = torch.arange(8, dtype=torch.float32)
    return Built.watched(None, [x], x * 2, {})


def test_a_transposed_reference_is_made_contiguous_once_so_the_one_pass_kernel_takes_it() -> None:
    from kbm_toolkit.evaluation.cell_task import Built

    ref = torch.arange(12, dtype=torch.float32).view(3, 4).t()  # as SDPA's fp32 reference comes back
    built = Built.watched(None, [ref.clone()], ref, {"tf32": ref * 2})
    assert not ref.is_contiguous() and built.ref.is_contiguous() and built.others["tf32"].is_contiguous()
    assert torch.equal(built.ref, ref) and torch.equal(built.others["tf32"], ref * 2)


@pytest.mark.parametrize("writes", [False, True])
def test_a_cell_is_compared_and_checked_in_one_step_and_a_writer_has_its_input_built_again(writes: bool) -> None:
    from kbm_toolkit.evaluation.cell_task import OVERWRITE_NOTE

    def kernel(model, inputs):
        if writes:
            inputs[0][3] = -1.0
        return torch.arange(8, dtype=torch.float32) * 2 + 1e-3

    cell: dict = {}
    assert _cells_task(kernel)._launch({"id": "m"}, _built(), cell) is (After.BUILD_AGAIN if writes else After.GO_ON)
    assert cell["outcome"] == "pass" and cell["margin"] == pytest.approx(1e-3, rel=1e-3)
    assert cell["compare_ms"] >= 0 and cell["check_ms"] >= 0 and "crash_ms" not in cell
    assert cell["checked_bytes"] == 2 * 8 * 4  # the input and the reference, 8 floats each, once
    assert (cell.get("note") == OVERWRITE_NOTE) is writes


@pytest.mark.parametrize("past_end, writes", [(False, False), (True, False), (True, True)])
def test_under_redzones_a_launch_that_writes_past_its_buffer_is_noted(
        past_end: bool, writes: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.cuda import redzone
    from kbm_toolkit.evaluation.cell_task import OVERWRITE_NOTE

    monkeypatch.setenv("KBM_REDZONES", "1")

    def kernel(model, inputs):
        out = redzone.allocate((8,), torch.float32, "cpu")
        redzone.allocate((4,), torch.float32, "cpu")  # a scratch buffer, left alone
        out.copy_(torch.arange(8, dtype=torch.float32) * 2)
        if past_end:
            redzone._zones[0][redzone.ELEMENTS + 8] = 5.0  # out[8]: one thread too many
        if writes:
            inputs[0][3] = -1.0
        return out

    cell: dict = {}
    after = _cells_task(kernel)._launch({"id": "m"}, _built(), cell)
    assert cell["outcome"] == "pass" and cell["margin"] == 0.0  # the output is right either way
    zones = "wrote into the redzones of 1 of its 2 buffers (KBM_REDZONES)"
    expected = [OVERWRITE_NOTE] * writes + [zones] * past_end
    assert cell.get("note") == ("; ".join(expected) or None)
    assert after is (After.BUILD_AGAIN if writes else After.GO_ON)


@pytest.mark.parametrize("writes", [False, True])
def test_a_launcher_that_breaks_the_contract_is_still_checked_for_writes(writes: bool) -> None:
    from kbm_toolkit.errors import ContractViolation
    from kbm_toolkit.evaluation.cell_task import OVERWRITE_NOTE

    def kernel(model, inputs):
        if writes:
            inputs[0].zero_()
        raise ContractViolation("computed with torch", "launch.py")

    cell: dict = {}
    assert _cells_task(kernel)._launch({"id": "m"}, _built(), cell) is (After.BUILD_AGAIN if writes else After.GO_ON)
    assert cell["outcome"] == "crash" and "crash_ms" in cell and "check_ms" in cell
    assert (cell["note"] == OVERWRITE_NOTE) is writes


def test_a_launch_whose_error_comes_at_the_cells_one_wait_is_its_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    # the launch is queued, not waited for: an illegal address it makes surfaces at the read-back
    from kbm_toolkit.cuda.readback import Readback

    def fault(self) -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(Readback, "run", fault)
    cell: dict = {}
    launched = _cells_task(lambda model, inputs: torch.zeros(8))._launch({"id": "m"}, _built(), cell)
    assert launched is After.STOP  # the context is gone: the worker is replaced
    assert cell["outcome"] == "crash" and "illegal memory access" in cell["note"]
    assert "crash_ms" in cell and "ms" not in cell and "check_ms" not in cell


def _rebuilding_task(monkeypatch: pytest.MonkeyPatch, builds: list, outputs: list) -> object:
    """A cell task reduced to what `_build_again` uses: each build of the input takes the next of
    `builds` (inputs, reference), each launch of the correct kernel the next of `outputs`."""
    from kbm_toolkit.cuda import reference

    def run_reference(problem, spec, models):
        models[spec.model_key] = "built"
        inputs, ref = builds.pop(0)
        return None, inputs, ref, 0.0

    monkeypatch.setattr(reference, "run_reference", run_reference)
    task = _cells_task(None)
    task.problem, task.models, task.margin_on = None, {("old",): "written over"}, {}
    task.correct = lambda model, inputs: outputs.pop(0)
    return task


def _drive(records) -> tuple[list, object]:
    """A task step's records, and what it returned."""
    out = []
    while True:
        try:
            out.append(next(records))
        except StopIteration as stop:
            return out, stop.value


class _Spec:
    id, model_key = "input-1", ("new",)


def _first(task, x: torch.Tensor) -> list[int]:
    """The first build's checksums, and the correct kernel's margin on it, as `_build_once` keeps it."""
    built = _built()
    cmp, _ = task._margins(x * 2 + 1e-3, built.ref, {})
    task.margin_on[_Spec.id] = cmp.margin
    return built.watch.sums


def test_an_input_built_again_after_a_write_is_trusted_where_it_matches_its_first_build(
        monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.arange(8, dtype=torch.float32)
    task = _rebuilding_task(monkeypatch, [([x.clone()], x * 2)], [x * 2 + 1e-3])
    records, built = _drive(task._build_again(_Spec, _first(task, x)))
    assert built is not None and torch.equal(built.inputs[0], x) and torch.equal(built.ref, x * 2)
    assert [r["kind"] for r in records] == ["time"] and records[0]["part"] == "building again"
    assert task.models == {("new",): "built"}  # the model cached before the write was dropped


@pytest.mark.parametrize("differs", ["input", "reference", "correct kernel"])
def test_an_input_built_again_that_differs_from_its_first_build_retires_the_worker(
        monkeypatch: pytest.MonkeyPatch, differs: str) -> None:
    x = torch.arange(8, dtype=torch.float32)
    build = ([x + 1 if differs == "input" else x.clone()], x * 3 if differs == "reference" else x * 2)
    out = x * 2 + (2e-3 if differs == "correct kernel" else 1e-3)
    task = _rebuilding_task(monkeypatch, [build], [out])
    records, built = _drive(task._build_again(_Spec, _first(task, x)))
    assert built is None
    assert [r["kind"] for r in records] == ["time", "poisoned"] and records[1]["input"] == "input-1"
    why = "correct kernel's margin" if differs == "correct kernel" else "differ from the first build"
    assert why in records[1]["note"]


def test_a_queued_watch_reads_its_own_words_of_the_shared_buffer() -> None:
    """The read-back's plumbing on the CPU: the checksum kernel emulated by the host's sums."""
    from kbm_toolkit.cuda.readback import Readback

    a, b = torch.arange(10, dtype=torch.float32), torch.arange(3, dtype=torch.int64)
    watch = Watch([a, b])
    watch._device = torch.device("cuda")  # as on the GPU: queued, not answered at once
    watch._launch = lambda slots: slots.copy_(torch.tensor([host_checksum(t) for t in (a, b)], dtype=torch.uint64)
                                              .view(torch.int64))
    readback = Readback(device="cpu")
    readback.add(3, lambda words: words.fill_(7))  # another part first: the watch's words come after its
    unchanged = watch.queue_changed(readback)
    assert [p.words for p in readback.parts] == [3, 2]
    readback.run()
    assert unchanged() is False
    b[1] = 5
    again = Readback(device="cpu")
    changed = watch.queue_changed(again)
    again.run()
    assert changed() is True
