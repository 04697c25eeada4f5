"""The GPU side of the kill matrix: one self-contained task (a problem, its inputs, mutant images)
in, a stream of records out. Runs only inside a worker process (`CELL_TASK`).

Input-major: each input is built once, the reference computed once, the correct substrate run
(its margin decides the input's validity), then every mutant, then the input is freed. After each
mutant the checksums of the inputs, the model's weights and the references (`cuda.checksum`, one
read of each, no copy; queued with the comparison and read back with it, `cuda.readback`) say
whether it wrote over them; a writer's cell stands, and the input is built again from its spec
in the same process, trusted only where its checksums equal the first build's and the correct
kernel's margin on it is the one it had (else the worker is replaced, as after a crash).

The reference is strict fp32; a task asking for margins against another reference environment
(`kbm_toolkit.judging`: TF32 convolutions, as the benchmarks run) computes that reference once
per input too (one more forward; where its bits equal the strict one's, none more is kept), and
each output is compared with both. A valid input stored without those margins gets them from one
launch of the correct kernel (none where the references agree bit for bit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterable, Iterator

from kbm_toolkit.cuda import redzone
from kbm_toolkit.cuda.stress import around_launch, beside
from kbm_toolkit.errors import KbmError
from kbm_toolkit.evaluation.first_kill import FirstKill, Settled
from kbm_toolkit.judging import STRICT, Margin, margin_key
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import Substrate
from kbm_toolkit.vocabulary import OUT_OF_MEMORY, REFERENCE_RAISED, Outcome, RecordKind

if TYPE_CHECKING:  # torch comes with it: a task imports it in the child only
    from kbm_toolkit.cuda.reference import ModelCache

Records = Generator[dict[str, Any], None, Any]
"""A step of the task: the records it yields, and what it returns to the step above."""

def in_columns(scale: str, ratio: float) -> bool:
    """Whether a (scale, ratio) margin is one every comparison has: `margin` (output, 1), `max_abs` (ratio 0)."""
    return ratio == 0 or (scale, ratio) == ("output", 1.0)


WARM_KERNEL = 'extern "C" __global__ void kbm_warm(float* p, int n) { if (threadIdx.x < n) p[threadIdx.x] = 0.0f; }'


def warm_up() -> dict[str, float]:
    """Pay a worker's start-up (torch, cuda.core, the CUDA context, lazy imports) before its first
    task; return the seconds each part took.

    The first matmul or convolution creates library handles, and the launch guard's first use
    sets up torch's dispatch modes: doing both here keeps them off the path of a spare that takes
    over after a crash.
    """
    parts: dict[str, float] = {}
    last = time.perf_counter()

    def lap(part: str) -> None:
        nonlocal last
        now = time.perf_counter()
        parts[part], last = now - last, now

    import torch
    from cuda.core import Device

    from kbm_toolkit.cuda.reference import strict_fp32_references
    from kbm_toolkit.cuda.launch_guard import guard
    from kbm_toolkit.cuda.checksum import Watch
    from kbm_toolkit.cuda.comparison import queue_compare
    from kbm_toolkit.cuda.readback import Readback
    from kbm_toolkit.cuda.nvrtc import compile_source
    from kbm_toolkit.cuda.kernels import Kernels, device_arch
    from kbm_toolkit.cuda.signatures import entry_points

    lap("imports")
    strict_fp32_references()
    Device(torch.cuda.current_device()).set_current()
    lap("context")
    with torch.no_grad():
        with guard("warm-up"):
            x = torch.zeros(4, 4, device="cuda")
        readback = Readback()  # a cell's judging step: the comparison and the checksum, read back once
        comparison, changed = queue_compare(readback, x, x.clone()), Watch([x]).queue_changed(readback)
        readback.run()
        comparison(), changed()
        lap("guard")
        x @ x  # cuBLAS and cuDNN handles: every restart would otherwise pay them in its first reference
        torch.nn.functional.conv2d(x[None, None], x[None, None, :3, :3])
        lap("handles")
        image = compile_source(WARM_KERNEL, device_arch())
        Kernels(image.cubin, entry_points(WARM_KERNEL), "warm-up").kbm_warm(
            x, 16, grid=1, block=16)  # the first launch of a process costs ~0.5 s
    torch.cuda.synchronize()
    lap("kernel")
    return parts


def unchanged(now: Any, saved: Any) -> bool:
    """Whether two tensors hold the same bits (a NaN equals itself here, where `torch.equal` would
    call two references with a NaN in the same place different)."""
    import torch

    if now.is_floating_point():
        bits = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[now.element_size()]
        return torch.equal(now.view(bits), saved.view(bits))
    return torch.equal(now, saved)


def cell_task(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield `input`, `start` and `cell` records for every (input, mutant) pair not in `done`
    (with a `first_kill` rule, nor any pair that rule skips after this task's own cells). An input
    in `valid` is not checked again: its `rebuilt` record only gives the time building it took.

    After a CUDA error the context is unusable: the task yields the crash cell and a `poisoned`
    record and stops, and the parent resumes the rest in a fresh worker.
    """
    began = time.time()
    yield from _handover(task, began)
    try:
        cells = _CellTask(task)
        yield {"kind": RecordKind.TIME, "part": "setting up", "s": time.time() - began}
        yield from cells.run()
    except Exception as e:
        if not cuda_error(e):
            raise
        # outside a launch (loading the correct kernel, freeing memory): this context is gone, not
        # the problem; the parent resumes in a fresh worker, and gives up if that fails the same way
        yield {"kind": RecordKind.POISONED, "note": _said(e)}


def _handover(task: dict[str, Any], began: float) -> Iterator[dict[str, Any]]:
    """The task's wait from the parent's send until it began here, split at the end of the work
    this child was doing ahead when it was sent (`building ahead`); the rest (`handover`) is the
    pipe and unpickling the task."""
    if "sent_at" not in task:
        return
    sent = task["sent_at"]
    ahead = min(max(0.0, task.get("prepared_at", sent) - sent), max(0.0, began - sent))
    if ahead:
        yield {"kind": RecordKind.TIME, "part": "building ahead", "s": ahead}
    yield {"kind": RecordKind.TIME, "part": "handover", "s": max(0.0, began - sent) - ahead}


PREPARE_FREE = 0.4
"""A spare builds ahead only while this share of the GPU's memory is free."""

PREPARE_HOLD = 0.2
"""A spare keeps what it built ahead only while it holds at most this share of the GPU's memory.
It holds its input until the worker's next is checked, so a larger copy could leave the worker's
next input no room (fuzz-shapes' inputs reach 64 GiB, and one worker ran out building three)."""

_PREPARED: dict[tuple, "Built"] = {}
"""The input this process built ahead as a spare (`prepare`), under its `_prepared_key`: at most one."""

_AHEAD_MODELS: list["ModelCache"] = []
"""The model this spare built ahead last, in its cache (at most one): the worker's next input often
shares it (the official trials, a batch size varied), and a large GEMM takes seconds of CPU to build."""


def _prepared_key(problem: str, spec: str, references: list[str]) -> tuple:
    return problem, spec, tuple(references)


def prepare(payload: dict[str, Any]) -> None:
    """In a spare: build the valid input its worker is on (`payload`: the task's `problem` and
    `margins`, and the input's spec under `spec`), with its references and checksums.

    The worker's restart after a crash or a write over its inputs then starts on that input at
    once; building it again in the fresh process was 16.5% of the worker's time on the eval bench's
    slice (0.17 s a restart on the H200, most of it the first use of torch's kernels in a process).
    """
    import torch

    from kbm_toolkit.cuda.reference import ModelCache, strict_fp32_references

    problem = Problem.from_record(payload["problem"])
    spec = InputSpec.from_record(payload["spec"])
    references = other_environments(payload["margins"])
    key = _prepared_key(problem.key, spec.id, references)
    if key in _PREPARED:  # built already: building it again would only delay a takeover
        return
    _drop_prepared(keep=(problem, spec))  # the input before: its memory goes back before the next is built
    free, total = torch.cuda.mem_get_info()
    if free < PREPARE_FREE * total:  # the workers need it more: a mutant must not run out for a copy
        _drop_prepared()
        return
    strict_fp32_references()  # as a task sets up: what it builds ahead is what the task would build
    try:
        if not _AHEAD_MODELS:
            _AHEAD_MODELS.append(ModelCache())
        built = Built.from_spec(problem, spec, _AHEAD_MODELS[0], references)
        if unusable(built.ref):
            return
    except torch.OutOfMemoryError:  # the GPU is busy with the workers: the task builds it if it must
        _drop_prepared()
        return
    if torch.cuda.memory_allocated() > PREPARE_HOLD * total:  # too large to hold: a takeover builds it again
        del built
        _drop_prepared()
        return
    _PREPARED[key] = built


def _drop_prepared(keep: tuple[Problem, InputSpec] | None = None) -> None:
    """Free what this process built ahead, its memory handed back to the GPU; its model too,
    unless it is the one `keep` (the problem and spec built ahead next) shares."""
    kept = bool(keep) and bool(_AHEAD_MODELS) and _AHEAD_MODELS[0].holds(*keep)
    if _PREPARED or (_AHEAD_MODELS and not kept):
        import torch

        _PREPARED.clear()
        if not kept:
            _AHEAD_MODELS.clear()
        torch.cuda.empty_cache()


def other_environments(margins: Iterable[Any]) -> list[str]:
    """The reference environments beside the strict one that a task's margins (reference, scale,
    ratio) ask for, sorted."""
    return sorted({str(r) for r, _, _ in margins if r != STRICT})


@dataclass
class Built:
    """A valid input, built: the model, its inputs and references, and their checksums."""

    model: Any
    inputs: list[Any]
    ref: Any
    others: dict[str, Any]
    """Reference environment -> its reference where its bits differ from the strict one's."""
    watch: Any
    """`cuda.checksum.Watch` over the inputs, the model's weights and buffers, and the references."""

    @classmethod
    def watched(cls, model: Any, inputs: list[Any], ref: Any, others: dict[str, Any]) -> "Built":
        """The built input, with the checksums of everything a kernel must leave as it found it (the
        tensors on the reference's device: the GPU's, or the CPU's where `kbm verify` runs there)."""
        import torch

        from kbm_toolkit.cuda.checksum import Watch

        # contiguous once per input, so every cell's comparison is the one-pass kernel's (a reference
        # that comes back as a view, as SDPA's seems to, sent each of level1/97's cells down torch's
        # passes: 0.28 s charged to comparing a cell)
        ref = ref.contiguous() if isinstance(ref, torch.Tensor) else ref
        others = {env: o.contiguous() if isinstance(o, torch.Tensor) else o for env, o in others.items()}
        state = [*model.parameters(), *model.buffers()] if isinstance(model, torch.nn.Module) else []
        tensors = [t for t in (*inputs, ref, *others.values(), *state)
                   if isinstance(t, torch.Tensor) and t.device == ref.device]
        return cls(model, inputs, ref, others, Watch(tensors))

    @classmethod
    def from_spec(cls, problem: Problem, spec: InputSpec, models: "ModelCache",
                  references: list[str]) -> "Built":
        """`spec`'s input built afresh (`models` caches the model, as `run_reference` says), with the
        other environments' `references` and the checksums."""
        from kbm_toolkit.cuda.reference import run_reference

        model, inputs, ref, _ = run_reference(problem, spec, models)
        return cls.watched(model, inputs, ref, other_references(model, inputs, ref, references))

    def overwritten(self) -> bool:
        """Whether a mutant wrote over an input, a weight or a reference."""
        return self.watch.changed()


def _redzones_written() -> str:
    """Under `KBM_REDZONES` (an experiment's switch, `cuda.redzone`), the cell's note on the
    buffers its launch allocated whose redzones it wrote; "" where it wrote none."""
    written, buffers = redzone.touched()
    return f"wrote into the redzones of {written} of its {buffers} buffers ({redzone.ENV})" if written else ""


OVERWRITE_NOTE = "wrote over its input, a weight or the reference (all built again for the next mutant)"
"""A writer's cell note. Until 2026-12-03 "… (worker replaced)": the same cells, a restart after
each. Before checksums: "wrote over its input or the reference (restored)", restored from copies
a stray write could reach too (`Store.overwrite_suspects`)."""


class After(Enum):
    """What a cell leaves its task to do next."""

    GO_ON = "go on"
    BUILD_AGAIN = "build again"
    """The mutant wrote over its input, a weight or a reference: the input is built anew first."""
    STOP = "stop"
    """The CUDA context is gone (or a rebuilt input cannot be trusted): a fresh worker resumes."""


def _compared_bytes(out: Any, built: Built) -> int:
    """Bytes a cell's comparisons read: the output and the reference, once per reference compared."""
    import torch

    if not isinstance(out, torch.Tensor) or out.shape != built.ref.shape:
        return 0
    size = out.numel() * out.element_size() + built.ref.numel() * built.ref.element_size()
    return size * (1 + len(built.others))


def _said(e: BaseException, limit: int = 160) -> str:
    """An exception as a record's note says it: its type and the start of its message."""
    return f"{type(e).__name__}: {str(e)[:limit]}"


def cuda_error(e: BaseException) -> bool:
    """Whether `e` says the CUDA context is unusable (an illegal address, a launch failure)."""
    return type(e).__name__ == "AcceleratorError" or "CUDA error" in str(e)


def unusable(ref: Any) -> str:
    """Why a reference's output tests nothing ("" when it does)."""
    import torch

    if not isinstance(ref, torch.Tensor):
        return f"reference returned {type(ref).__name__}, not a tensor"
    if ref.is_floating_point() and not bool(torch.isfinite(ref).all()):
        return "reference is non-finite on this input"
    return ""


def other_references(model: Any, inputs: list[Any], ref: Any, references: list[str]) -> dict[str, Any]:
    """The reference in each environment of `references` (beside the strict one, `ref`), where its
    bits differ from the strict one's: one forward each."""
    import torch

    from kbm_toolkit.cuda.reference import reference_environment

    others = {}
    for name in references:
        with reference_environment(name), torch.no_grad():
            other = model(*inputs)
        if not (isinstance(other, torch.Tensor) and other.shape == ref.shape and other.dtype == ref.dtype
                and unchanged(other, ref)):
            others[name] = other
    if references and ref.is_cuda:
        torch.cuda.synchronize()
    return others


def compared(out: Any, ref: Any, others: dict[str, Any], margins: list[Margin],
             references: list[str]) -> tuple[Any, dict[str, float]]:
    """The strict comparison of `out` with `ref`, and every margin of `margins` beyond the columns:
    against the strict reference, or against `others` (environment -> its reference) where that
    differs from it; `references` are the other environments asked for."""
    from kbm_toolkit.cuda.readback import Readback

    readback = Readback()
    read = queue_compared(readback, out, ref, others, margins, references)
    readback.run()
    return read()


def queue_compared(readback: Any, out: Any, ref: Any, others: dict[str, Any], margins: list[Margin],
                   references: list[str]) -> Callable[[], tuple[Any, dict[str, float]]]:
    """`compared`, its comparisons queued on `readback` (`cuda.readback.Readback`); the returned
    function gives its answer once the readback has run."""
    from kbm_toolkit.cuda.comparison import queue_compare

    def asked(reference: str) -> list[tuple[str, float]]:
        return [(sc, x) for r, sc, x in margins if r == reference]

    def value(cmp: Any, scale: str, ratio: float) -> float:
        if not in_columns(scale, ratio):
            return cmp.extra[(scale, ratio)]
        return cmp.max_abs if ratio == 0 else cmp.margin

    same = [STRICT] + [name for name in references if name not in others]
    pairs = sorted({p for name in same for p in asked(name) if not in_columns(*p)})
    strict = queue_compare(readback, ref, out, pairs)
    theirs = {name: queue_compare(readback, other, out, [p for p in asked(name) if not in_columns(*p)])
              for name, other in others.items()}

    def read() -> tuple[Any, dict[str, float]]:
        cmp = strict()
        found = {margin_key(name, sc, x): value(cmp, sc, x) for name in same for sc, x in asked(name)}
        for name, other in theirs.items():
            got = other()
            found.update({margin_key(name, sc, x): value(got, sc, x) for sc, x in asked(name)})
        return cmp, found

    return read


class _Timed:
    """A mutant's launch, queued between two CUDA events: its host time now, its GPU time once
    the cell's read-back has waited for it (none off the GPU, where tests run it on CPU tensors)."""

    def __init__(self, cuda: bool, stress: str = "") -> None:
        self.cuda = cuda
        self.stress = stress
        self.host_s = 0.0
        self._events: tuple[Any, Any] | None = None

    def enqueue(self, kernel: Any, built: Built) -> Any:
        """Queue `kernel` on `built`'s model and inputs; its output. On an input whose spec names a
        stress, beside the stress kernel (`cuda.stress`)."""
        import torch

        start = time.perf_counter()
        stress = around_launch(self.stress) if self.cuda else None
        if stress is not None:
            kernel.preload()  # a first launch's lazy load would wait for the stress to end
        if self.cuda:
            self._events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            self._events[0].record()
        redzone.begin()  # the buffers of this launch are the ones a cell's note counts
        with beside(stress):
            out = kernel.enqueue(built.model, built.inputs)
            if self._events is not None:
                self._events[1].record()
        self.host_s = time.perf_counter() - start
        return out

    def gpu_ms(self) -> float:
        """The launch's GPU time (after a synchronisation), 0 off the GPU."""
        return self._events[0].elapsed_time(self._events[1]) if self._events is not None else 0.0


class _CellTask:
    """One task in a worker: its problem, the correct kernel, the mutants' kernels as they load, and
    which pairs are done or needless."""

    def __init__(self, task: dict[str, Any]) -> None:
        from kbm_toolkit.cuda.kernels import LoadedKernel
        from kbm_toolkit.cuda.nvrtc import Image
        from kbm_toolkit.cuda.reference import ModelCache, strict_fp32_references

        strict_fp32_references()
        self.problem = Problem.from_record(task["problem"])
        self.substrate = Substrate(self.problem.key, Path(task["substrate"]))
        self.correct = LoadedKernel(self.substrate, Image(**task["original"]))
        self.specs = task["specs"]
        self.mutants = task["mutants"]
        self.done = {tuple(p) for p in task.get("done", ())}
        self.stopped: set[str] = set()  # crashed on an earlier input of this task (see driver._Driver)
        # with --first-kill: which protocols this task's own cells show detecting each mutant
        self.checked = set(task.get("checked", ()))
        self.valid = task.get("valid", {})  # input -> the correct kernel's stored margin on it, where it passed
        self.settled = (Settled(FirstKill.from_record(task["first_kill"]), dict(self.valid))
                        if task.get("first_kill") else None)
        self.rerun_crashers = task.get("rerun_crashers")
        self.margins: list[Margin] = [(str(r), str(sc), float(x)) for r, sc, x in task.get("margins", ())]
        self.references = other_environments(self.margins)
        self.recheck: dict[str, dict[str, Any]] = task.get("recheck", {})
        """Valid inputs stored without some of `margins`: their stored margin and max |ref - out|."""
        self.kernels: dict[str, Any] = {}
        self.models = ModelCache()
        self.margin_on: dict[str, float] = {}
        """Valid input -> the correct kernel's margin on it (a rebuilt input must give the same)."""

    def run(self) -> Iterator[dict[str, Any]]:
        """Every input in turn: build and check it, then run each pending mutant on it."""
        shapes = None
        for record in self.specs:
            spec = InputSpec.from_record(record)
            pending = [m for m in self.mutants if (m["id"], spec.id) not in self.done and m["id"] not in self.stopped
                       and (self.settled is None or self.settled.needed(m["id"], spec.id))]
            if not pending and spec.id in self.checked and spec.id not in self.recheck:
                continue
            if shapes is not None and spec.shape != shapes:
                yield self._free()
            shapes = spec.shape
            try:
                built = yield from self._build(spec)
            except Exception as e:
                if not cuda_error(e):
                    raise
                # the context broke before this input's first mutant: an earlier mutant's stray writes
                # reached memory no checksum watches; a fresh worker builds it again
                yield {"kind": RecordKind.POISONED, "input": spec.id, "note": _said(e)}
                return
            if built is None:
                continue  # an input that rejects the reference or the correct kernel kills nothing
            if self.settled is not None:  # its check says at which tolerances its cells can count
                pending = [m for m in pending if self.settled.needed(m["id"], spec.id)]
            for m in pending:
                after = yield from self._cell(m, spec, built)
                if after is After.STOP:
                    return  # a CUDA error: the context is gone, a fresh worker resumes
                if after is After.BUILD_AGAIN:
                    first, built = built.watch.sums, None  # its memory back before the new build
                    built = yield from self._build_again(spec, first)
                    if built is None:
                        return
            del built
        yield self._free()

    def _free(self) -> dict[str, Any]:
        """Hand the inputs' memory back to the GPU, and say how long that took (a `time` record).

        Workers and their spares share the GPU: a cache kept at each worker's largest input once
        left new spares no memory to start in. Between inputs of the same shapes the cache is
        kept: the next input takes the same blocks, without a cudaFree and cudaMalloc of each."""
        import torch

        start = time.perf_counter()
        torch.cuda.empty_cache()
        return {"kind": RecordKind.TIME, "part": "freeing", "s": time.perf_counter() - start}

    def _build(self, spec: InputSpec) -> Records:
        """Build the input, its model and reference, and yield its `input` (or `rebuilt`) record;
        return it built when it is valid, else None. Out of GPU memory twice (the cache freed
        between), it yields an `unbuilt` record instead: the input stays unchecked, not invalid."""
        import torch

        for _ in range(2):  # the first may meet another worker's peak
            try:
                return (yield from self._build_once(spec))
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
        label = f" ({spec.label})" if spec.label else ""
        room = ""
        if torch.cuda.is_available():  # how far off it was: a larger GPU, or fewer workers beside it
            free, total = torch.cuda.mem_get_info()
            room = f" ({free / 2**30:.0f} of {total / 2**30:.0f} GiB free after)"
        yield {"kind": RecordKind.UNBUILT, "input": spec.id,
               "note": f"out of GPU memory building input {spec.id}{label} and its reference{room}"}
        return None

    def _build_once(self, spec: InputSpec) -> Records:
        """`_build`'s one try, which raises torch.OutOfMemoryError where memory runs out."""
        import torch

        from kbm_toolkit.cuda.reference import run_reference

        check: dict[str, Any] = {"kind": RecordKind.INPUT, "input": spec.id, "valid": False}
        begun = time.perf_counter()
        built = _PREPARED.pop(_prepared_key(self.problem.key, spec.id, self.references), None)
        _drop_prepared()  # built ahead for another input: its memory is needed now
        if built is not None and spec.id in self.valid:  # this process built it ahead, as a spare
            self.models.keep(self.problem, spec, built.model)  # the task's other inputs may share its model
            check.update(ref_ms=0.0, ahead=True, build_ms=(time.perf_counter() - begun) * 1000)
        else:
            try:
                model, inputs, ref, check["ref_ms"] = run_reference(self.problem, spec, self.models)
            except Exception as e:  # the reference rejects this input: it tests nothing
                # unless the context is gone (an earlier mutant's stray write) or memory ran out: not the input's
                if cuda_error(e) or isinstance(e, torch.OutOfMemoryError):
                    raise
                check["note"] = f"{REFERENCE_RAISED} {_said(e, 200)}"
                yield check
                return None
            why = unusable(ref)
            if why:
                check["note"] = why
                yield check
                return None
            check["build_ms"] = (time.perf_counter() - begun) * 1000 - check["ref_ms"]  # model and inputs
            others = self._other_references(model, inputs, ref, check)
            if spec.id not in self.valid:
                check.update(self._check(spec, model, inputs, ref, others))
            built = None
            if check["valid"] or spec.id in self.valid:
                start = time.perf_counter()
                built = Built.watched(model, inputs, ref, others)
                check["build_ms"] += (time.perf_counter() - start) * 1000
        if spec.id in self.valid:  # checked before (another run, or before a restart): the mutants need
            # the reference, not the check
            check.update(kind=RecordKind.REBUILT, valid=True, margin=self.valid[spec.id])
            if spec.id in self.recheck:
                yield self._added_margins(spec, built.model, built.inputs, built.ref, built.others)
        yield check
        if built is not None:
            self.margin_on[spec.id] = check["margin"]
            if self.settled is not None:
                self.settled.check(spec.id, check["margin"])
        return built

    def _build_again(self, spec: InputSpec, first: list[int]) -> Records:
        """After a write over what `Built` watches: the input, its model and references built anew
        from the spec (the cached model dropped), and a `time` record. Trusted, and returned, only
        where their checksums equal the first build's (`first`) and the correct kernel's margin on
        them is the one it had, bit for bit: what else the writer reached would show there. Else a
        `poisoned` record (a fresh worker takes over, as after a crash), and None."""
        import torch

        start = time.perf_counter()
        self.models.clear()  # its weights may be what was written over
        why, built = "", None
        try:
            built = Built.from_spec(self.problem, spec, self.models, self.references)
            if built.watch.sums != first:
                why = "its input, weights or references differ from the first build"
            else:
                cmp, _ = self._margins(self.correct(built.model, built.inputs), built.ref, built.others)
                if cmp.margin != self.margin_on[spec.id]:
                    why = f"the correct kernel's margin on it is {cmp.margin:.6g}, not {self.margin_on[spec.id]:.6g}"
        except Exception as e:  # a CUDA error too: the context is gone, and the fresh worker says so
            if isinstance(e, torch.OutOfMemoryError):
                torch.cuda.empty_cache()
            why = _said(e)
        yield {"kind": RecordKind.TIME, "part": "building again", "s": time.perf_counter() - start}
        if why:
            yield {"kind": RecordKind.POISONED, "input": spec.id, "note": f"input {spec.id} built again: {why}"}
            return None
        return built

    def _other_references(self, model: Any, inputs: list[Any], ref: Any, check: dict[str, Any]) -> dict[str, Any]:
        """The reference in each other environment the task's margins need (`other_references`),
        timed into `ref_ms`."""
        start = time.perf_counter()
        others = other_references(model, inputs, ref, self.references)
        check["ref_ms"] += (time.perf_counter() - start) * 1000
        return others

    def _margins(self, out: Any, ref: Any, others: dict[str, Any]) -> tuple[Any, dict[str, float]]:
        """The strict comparison of `out`, and every margin the task asks for beyond its columns."""
        return compared(out, ref, others, self.margins, self.references)

    def _added_margins(self, spec: InputSpec, model: Any, inputs: list[Any], ref: Any,
                       others: dict[str, Any]) -> dict[str, Any]:
        """The `margins` record of a valid input stored without some of the task's margins: from the
        stored ones where every other reference equals the strict one and nothing else is asked,
        else from one launch of the correct kernel."""
        stored = self.recheck[spec.id]
        record: dict[str, Any] = {"kind": RecordKind.MARGINS, "input": spec.id}
        if not others and all(in_columns(sc, x) for _, sc, x in self.margins):
            record["margins"] = {margin_key(name, sc, x): stored["margin"] if x == 1.0 else stored["max_abs"]
                                 for name, sc, x in self.margins}
            return record
        start = time.perf_counter()
        try:
            _, record["margins"] = self._margins(self.correct(model, inputs), ref, others)
        except KbmError as e:
            raise KbmError(f"the correct substrate fails on input {spec.id}: {e.line()}") from e
        record["kernel_ms"] = (time.perf_counter() - start) * 1000
        return record

    def _check(self, spec: InputSpec, model: Any, inputs: list[Any], ref: Any, others: dict[str, Any]) -> dict[str, Any]:
        """The correct kernel on a new input: the reference's size, and the outcome and margin that
        decide the input's validity (and its margins against the other references)."""
        magnitude = ref.abs() if ref.is_floating_point() else ref.double().abs()
        found: dict[str, Any] = {"ref_abs_max": float(magnitude.max()) if ref.numel() else 0.0,
                                 "ref_abs_mean": float(magnitude.mean()) if ref.numel() else 0.0}
        del magnitude
        start = time.perf_counter()
        try:
            cmp, margins = self._margins(self.correct(model, inputs), ref, others)
        except KbmError as e:
            raise KbmError(f"the correct substrate fails on input {spec.id}: {e.line()}") from e
        found.update(valid=cmp.outcome.value == Outcome.PASS, outcome=cmp.outcome.value, margin=cmp.margin,
                     max_abs=cmp.max_abs, kernel_ms=(time.perf_counter() - start) * 1000, margins=margins)
        return found

    def _cell(self, m: dict[str, Any], spec: InputSpec, built: Built) -> Records:
        """Run mutant `m` on a built input and yield its `start` and `cell` records; return what
        the task does next (`After`; after a CUDA error, with a `poisoned` record: the task stops,
        and a fresh worker resumes it)."""
        yield {"kind": RecordKind.START, "mutant": m["id"], "input": spec.id}
        cell: dict[str, Any] = {"kind": RecordKind.CELL, "mutant": m["id"], "input": spec.id}
        after = self._launch(m, built, cell, spec.stress)
        if after is After.STOP:
            yield cell
            yield {"kind": RecordKind.POISONED, "mutant": m["id"], "input": spec.id}
            return after
        if self.settled is not None:  # a crash settles its input's protocols, as any detection does
            self.settled.cell(m["id"], spec.id, cell["outcome"], cell.get("margin"))
        elif cell["outcome"] == Outcome.CRASH and not self.rerun_crashers:
            self.stopped.add(m["id"])
        yield cell
        return after

    def _launch(self, m: dict[str, Any], built: Built, cell: dict[str, Any], stress: str = "") -> After:
        """Load mutant `m`, launch it (beside `stress`, its input spec's), compare its output and
        check that it left its inputs, weights and references as it found them, into `cell`; what the
        task does next: STOP where a CUDA error left the context unusable, BUILD_AGAIN where the
        mutant wrote over what it must not.

        The launch is queued, not waited for: its comparison and checksums queue behind it and the
        host waits once for all three (`_judge`). Where workers share a GPU, every wait can also be
        a wait for another worker's time slice."""
        import torch

        start, judged = time.perf_counter(), False
        try:
            kernel = self._kernel(m)  # loading its image is not the launch: timed apart
            cell["load_ms"] = (time.perf_counter() - start) * 1000
            start = time.perf_counter()
            timed = _Timed(built.ref.is_cuda, stress)
            try:
                out = timed.enqueue(kernel, built)
            except torch.OutOfMemoryError:  # maybe another worker's peak: free the cache, try once more
                torch.cuda.empty_cache()
                start = time.perf_counter()
                out = timed.enqueue(kernel, built)
            cmp, margins, overwritten = self._judge(out, built, cell, timed)
            judged = True
            cell.update(outcome=cmp.outcome.value, margin=cmp.margin, max_abs=cmp.max_abs,
                        compared_bytes=_compared_bytes(out, built), checked_bytes=built.watch.nbytes)
            if margins:
                cell["margins"] = margins
            del out
            zones = _redzones_written() if redzone.configured() else ""
            if overwritten:  # its cell stands; what else its stray writes reached, the rebuild checks
                cell["note"] = "; ".join(n for n in (OVERWRITE_NOTE, zones) if n)
                return After.BUILD_AGAIN
            if zones:
                cell["note"] = zones
        except KbmError as e:  # e.g. a launcher mutant breaking the contract: this cell crashed
            cell.update(outcome=Outcome.CRASH, note=e.line(), crash_ms=(time.perf_counter() - start) * 1000)
        except torch.OutOfMemoryError as e:  # twice: other workers fill the GPU (no rule changes what a
            # launcher allocates); kept as no measurement (`OUT_OF_MEMORY`), which the next run measures again
            cell.update(outcome=Outcome.CRASH, note=f"{OUT_OF_MEMORY}: {str(e)[:200]}",
                        crash_ms=(time.perf_counter() - start) * 1000)
            torch.cuda.empty_cache()
        except Exception as e:  # a CUDA error: the context is gone for good
            # crash_ms: from the launch until its error came (at the cell's one wait, or before)
            cell.update(outcome=Outcome.CRASH, note=_said(e, 200),
                        crash_ms=(time.perf_counter() - start) * 1000)
            return After.STOP
        # a crash that left the context usable (before its judging) may still have written over its inputs
        return After.GO_ON if judged else self._intact(built, cell)

    def _intact(self, built: Built, cell: dict[str, Any]) -> After:
        """Whether the launch left what `built` watches as it found it (GO_ON), into `cell` (its
        `check_ms`, and its note where not)."""
        start = time.perf_counter()
        try:
            after = After.BUILD_AGAIN if built.overwritten() else After.GO_ON
            if after is After.BUILD_AGAIN:
                cell["note"] = OVERWRITE_NOTE
        except Exception as e:  # a CUDA error surfacing only now: the context is gone all the same
            cell["note"] = f"checking for overwrites failed: {_said(e)}"
            after = After.STOP
        cell["check_ms"] = (time.perf_counter() - start) * 1000
        return after

    def _judge(self, out: Any, built: Built, cell: dict[str, Any],
               timed: "_Timed") -> tuple[Any, dict[str, float], bool]:
        """The comparisons of `out` and whether the launch wrote over what `built` watches, their
        kernels queued behind the launch (`timed`) and read back once (`cuda.readback`): one wait
        for the GPU. `cell` gets `ms`, `compare_ms` and `check_ms`: each part's own queueing, and
        the one wait split between them by their kernels' GPU time; and `compare_gpu_ms`, that
        GPU time of the comparisons alone, and `check_gpu_ms`, the checksums' (what the eval bench
        sets against their floors too)."""
        from kbm_toolkit.cuda.readback import Readback

        readback = Readback()
        began = time.perf_counter()
        read_comparisons = queue_compared(readback, out, built.ref, built.others, self.margins, self.references)
        compares = len(readback.parts)
        queued = time.perf_counter()
        read_overwritten = built.watch.queue_changed(readback)
        checked = time.perf_counter()
        readback.run()  # the launch's own CUDA error, if any, comes here
        cmp, margins = read_comparisons()
        overwritten = read_overwritten()
        wait = time.perf_counter() - checked
        gpu = [timed.gpu_ms(), sum(readback.gpu_ms[:compares]), sum(readback.gpu_ms[compares:])]
        shares = [g / sum(gpu) for g in gpu] if sum(gpu) > 0 else [1.0, 0.0, 0.0]
        cell["ms"] = (timed.host_s + wait * shares[0]) * 1000
        cell["compare_ms"] = (queued - began + wait * shares[1]) * 1000
        cell["check_ms"] = (checked - queued + wait * shares[2]) * 1000
        cell["compare_gpu_ms"], cell["check_gpu_ms"] = gpu[1], gpu[2]
        return cmp, margins, overwritten

    def _kernel(self, m: dict[str, Any]) -> Any:
        """Mutant `m`'s kernel, loaded once per task."""
        from kbm_toolkit.cuda.kernels import LoadedKernel
        from kbm_toolkit.cuda.nvrtc import Image

        if m["id"] not in self.kernels:
            self.kernels[m["id"]] = LoadedKernel(self.substrate, Image(**m["image"]), m["kernel_source"],
                                                 launcher_source=m.get("launcher_source"), launch=m.get("launch"),
                                                 original=self.correct.kernels)
        return self.kernels[m["id"]]
