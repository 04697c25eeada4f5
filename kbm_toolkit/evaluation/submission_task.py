"""The GPU side of `kbm verify`: one problem's submissions on its inputs, in a worker process
(`SUBMISSION_TASK`), streamed back record by record.

Input-major, as the kill matrix: each input is built once from its spec, its reference computed
once in every environment the protocols need, then each submission runs on it. A submission's
file is executed once per task (an inline CUDA extension compiles here, so loading has a deadline
of its own); its model is built as KernelBench builds it: `get_init_inputs()` and
`ModelNew(*init)` each after seed 42, on the CPU, then moved to the device, and kept for the
inputs that share its shapes. Before each forward, the reference's and the submission's, the
input's seed is set again, as KernelBench's trials do.

After each submission, checksums (`cuda.checksum`, one read each, as the kill matrix takes them:
`cell_task.Built`) say whether it wrote over its inputs, the references or the reference model's
weights: its cell stands with a note, and the input is built again before the
next submission, with every cached model. A CUDA error poisons the context: the task yields a
`poisoned` record and stops, and the parent resumes in a fresh worker.
"""

from __future__ import annotations

import linecache
import time
from typing import Any, Generator, Iterator

from kbm_toolkit.analysis.submissions import NO_TEST
from kbm_toolkit.cuda.stress import around_launch, beside
from kbm_toolkit.evaluation.cell_task import Built, compared, cuda_error, other_references, unusable
from kbm_toolkit.judging import STRICT, Margin
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.submission import CLASS_NAME
from kbm_toolkit.vocabulary import Outcome, RecordKind

Records = Generator[dict[str, Any], None, Any]

MODEL_BYTES = 16 << 30
"""Submissions' models kept built at once, in bytes of parameters and buffers: beyond it, the
oldest are dropped and built again when needed (same seed, same weights)."""


def submission_task(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield `input`, `start`, `loaded`, `cell` and `poisoned` records for every (submission, input)
    pair of the task not in `done`, input after input."""
    yield from _SubmissionTask(task).run()


class _SubmissionTask:
    """One task in a worker: the problem, its submissions' classes and models as they load."""

    def __init__(self, task: dict[str, Any]) -> None:
        from kbm_toolkit.cuda.reference import ModelCache

        self.problem = Problem.from_record(task["problem"])
        self.device = task.get("device", "cuda")
        if self.device == "cuda":
            from kbm_toolkit.cuda.reference import strict_fp32_references

            strict_fp32_references()
        self.specs = [InputSpec.from_record(r) for r in task["specs"]]
        self.submissions: list[dict[str, Any]] = task["submissions"]
        self.done = {tuple(p) for p in task.get("done", ())}
        self.margins: list[Margin] = [(str(r), str(sc), float(x)) for r, sc, x in task.get("margins", ())]
        self.references = sorted({r for r, _, _ in self.margins if r != STRICT})
        self.failed: set[str] = set()
        """Submissions whose file did not load: no input is run for them."""
        self.classes: dict[str, Any] = {}
        self.reference_models = ModelCache()
        """The problem module at each input's shapes, and the reference models."""
        self.models: dict[tuple[str, tuple], Any] = {}
        """(submission, model key) -> its built model, or the line saying why building it failed."""

    def run(self) -> Iterator[dict[str, Any]]:
        """Every input in turn: build it and its references, then run each pending submission on it.

        A CUDA error outside a submission's own launch (building an input after an earlier
        submission's stray writes, say) yields a `poisoned` record and ends the task: a fresh
        worker builds that input again."""
        try:
            yield from self._inputs()
        except Exception as e:
            if not cuda_error(e):
                raise
            yield {"kind": RecordKind.POISONED, "note": f"{type(e).__name__}: {_first_line(e)}"}

    def _inputs(self) -> Iterator[dict[str, Any]]:
        for spec in self.specs:
            pending = [s for s in self.submissions if (s["id"], spec.id) not in self.done]
            if not pending:
                continue
            built = yield from self._build(spec)
            for s in pending:
                if isinstance(built, str):  # the reference tests nothing on this input
                    yield {"kind": RecordKind.CELL, "submission": s["id"], "input": spec.id, "outcome": None,
                           "note": f"{NO_TEST}: {built}"}
                    continue
                if not (yield from self._load(s)):
                    continue
                usable, wrote = yield from self._cell(s, spec, built)
                if not usable:
                    return  # the CUDA context is gone: a fresh worker resumes
                if wrote:  # what else its writes reached no checksum says: every cached model goes too
                    self.models.clear()
                    self.reference_models.clear()
                    built = yield from self._build(spec, again=True)
            self._release()

    def _sync(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def _release(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.empty_cache()  # other workers on the GPU need the input's memory back

    def _build(self, spec: InputSpec, again: bool = False) -> Records:
        """Build the input and its references; yield its `input` record (not when built `again`);
        return it built, or the words saying why its reference tests nothing."""
        import torch

        from kbm_toolkit.problems.tensors import set_seed, spec_inputs

        record: dict[str, Any] = {"kind": RecordKind.INPUT, "input": spec.id}
        begun = time.perf_counter()
        try:
            module, model = self.reference_models.get(self.problem, spec, self.device)
            inputs = spec_inputs(spec, module, self.device)
            start = time.perf_counter()
            with torch.no_grad():
                set_seed(spec.seed)  # KernelBench seeds each trial's forwards
                ref = model(*inputs)
            self._sync()
            ref_ms = (time.perf_counter() - start) * 1000
            why = unusable(ref)
            others = {} if why else other_references(model, inputs, ref, self.references)
        except torch.OutOfMemoryError:
            raise  # about this GPU's load, not the input: the parent reports it
        except Exception as e:  # the reference rejects this input: no submission is judged on it
            if cuda_error(e):
                raise
            why, ref_ms = f"the reference raised {type(e).__name__}: {str(e)[:200]}", 0.0
        record.update(ref_ms=ref_ms, build_ms=(time.perf_counter() - begun) * 1000 - ref_ms, note=why or None)
        if not again:
            yield record
        if why:
            return why
        return Built.watched(model, inputs, ref, others)

    def _load(self, s: dict[str, Any]) -> Records:
        """Execute the submission's file once per task and take its `ModelNew`; yield `start`
        (phase `load`) and `loaded`; return whether it loaded."""
        if s["id"] in self.failed:
            return False
        if s["id"] in self.classes:
            return True
        yield {"kind": RecordKind.START, "submission": s["id"], "phase": "load"}
        start = time.perf_counter()
        note = None
        try:
            self.classes[s["id"]] = load_class(s)
        except Exception as e:  # the file is user input: whatever it raises is its verdict
            if cuda_error(e):
                raise
            note = f"loading it raised {type(e).__name__}: {_first_line(e)}"
            self.failed.add(s["id"])
        yield {"kind": RecordKind.LOADED, "submission": s["id"], "ok": note is None, "note": note,
               "load_ms": (time.perf_counter() - start) * 1000}
        return note is None

    def _model(self, s: dict[str, Any], spec: InputSpec) -> tuple[Any, float | None]:
        """The submission's model for the spec's shapes, built as KernelBench builds it, then kept;
        and the milliseconds building it took (None: it was kept from an earlier input)."""
        import torch

        from kbm_toolkit.problems.tensors import init_inputs, set_seed
        from kbm_toolkit.problems.seeds import WEIGHT_SEED

        key = (s["id"], spec.model_key(self.problem))
        if key in self.models:
            return self.models[key], None
        module, reference = self.reference_models.get(self.problem, spec, self.device)
        start = time.perf_counter()
        try:
            init = init_inputs(module)
            with torch.no_grad():
                set_seed(WEIGHT_SEED)
                model = self.classes[s["id"]](*init)
                if spec.reinit == "normal":
                    redraw_like(reference, model)
                model = model.to(self.device)
        except Exception as e:
            if cuda_error(e):
                raise
            model = f"{CLASS_NAME}(*get_init_inputs()) raised {type(e).__name__}: {_first_line(e)}"
        self._keep(key, model)
        return model, (time.perf_counter() - start) * 1000

    def _keep(self, key: tuple[str, tuple], model: Any) -> None:
        """Cache a model, dropping the oldest while the cache holds more than `MODEL_BYTES`."""
        self.models[key] = model
        while len(self.models) > 1 and sum(map(_bytes, self.models.values())) > MODEL_BYTES:
            del self.models[next(iter(self.models))]

    def _cell(self, s: dict[str, Any], spec: InputSpec, built: Built) -> Records:
        """Run submission `s` on a built input and yield its `start` and `cell` records; return
        (usable, wrote): usable False after a CUDA error (with a `poisoned` record), wrote True when
        it wrote over the input or a reference (its cell stands, with a note)."""
        import torch

        from kbm_toolkit.problems.tensors import set_seed

        yield {"kind": RecordKind.START, "submission": s["id"], "input": spec.id, "phase": "run"}
        cell: dict[str, Any] = {"kind": RecordKind.CELL, "submission": s["id"], "input": spec.id}
        wrote = False
        try:
            model, cell["build_ms"] = self._model(s, spec)
            if isinstance(model, str):
                cell.update(outcome=Outcome.CRASH, note=model)
                yield cell
                return True, False
            start = time.perf_counter()
            # a stressed input's forward runs beside the stress; a submission's kernels cannot be
            # loaded ahead as a mutant's are, so a first launch's load may hold the stop up to its fuse
            stress = around_launch(spec.stress) if built.ref.is_cuda else None
            with torch.no_grad():
                set_seed(spec.seed)
                with beside(stress):
                    out = model(*built.inputs)
            self._sync()  # an asynchronous error of its kernels surfaces here, charged to it
            cell["ms"] = (time.perf_counter() - start) * 1000
            cmp, margins = compared(out, built.ref, built.others, self.margins, self.references)
            cell.update(outcome=cmp.outcome.value, margin=cmp.margin, max_abs=cmp.max_abs, margins=margins or None)
            if cmp.outcome is Outcome.SHAPE:
                cell["note"] = f"output {_shape(out)}, expected {_shape(built.ref)}"
            del out
            wrote = built.overwritten()
            if wrote:
                cell["note"] = OVERWRITE_NOTE
        except torch.OutOfMemoryError as e:
            cell.update(outcome=Outcome.CRASH, note=f"OutOfMemoryError: {str(e)[:200]}")
            self.models.clear()
            self._release()
        except Exception as e:
            cell.update(outcome=Outcome.CRASH, note=f"{type(e).__name__}: {_first_line(e)}", ms=None)
            if cuda_error(e):
                yield cell
                yield {"kind": RecordKind.POISONED, "submission": s["id"], "input": spec.id}
                return False, False
        yield cell
        return True, wrote


OVERWRITE_NOTE = ("wrote over its inputs, the reference or the reference model's weights (the input was built "
                  "again for the next submission)")


def load_class(s: dict[str, Any]) -> Any:
    """Execute a submission's text as a module of its own and return its `ModelNew`."""
    import types

    path, source = s["path"], s["source"]
    # registered for inspect and tracebacks: Triton's JIT reads its kernels' source through them
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    module = types.ModuleType(f"kbm_submission_{s['id']}")
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    cls = getattr(module, CLASS_NAME, None)
    if not callable(cls):
        raise TypeError(f"the module defines no callable {CLASS_NAME}")
    return cls


def redraw_like(reference: Any, model: Any) -> None:
    """Give `model`'s float parameters the values `problems.tensors.spec_model` re-drew for the
    reference's, in order; ValueError when their shapes, in order, are not the reference's."""
    mine = [p for p in model.parameters() if p.is_floating_point()]
    theirs = [p for p in reference.parameters() if p.is_floating_point()]
    if [tuple(p.shape) for p in mine] != [tuple(p.shape) for p in theirs]:
        raise ValueError(f"re-drawn parameters need {CLASS_NAME}'s float parameters, in order, to have the "
                         "reference Model's shapes")
    for p, q in zip(mine, theirs):
        p.copy_(q.detach().to(p.device, p.dtype))


def _bytes(model: Any) -> int:
    import torch

    if not isinstance(model, torch.nn.Module):
        return 0
    return sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return str(tuple(shape)) if shape is not None else f"a {type(value).__name__}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else "")[:300]
