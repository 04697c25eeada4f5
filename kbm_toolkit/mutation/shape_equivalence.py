"""Equivalence at a shape: whether any tensor values at an input's shapes could tell a mutant from
the original at all.

A value check at a shape can only witness a mutant that runs different code there. For each
shape an input spec builds (its module-constant overrides, or its KBV hidden config), the
substrate's launcher runs on meta tensors (`cuda.dryrun`, no GPU) and records its launches:
kernel, grid, block and every scalar argument. A kernel mutant is the same as the original at
that shape when each kernel it changed, compiled once per launch with that launch's values
written in (`mutation.specialize`), compiles to the original's machine code; a launcher mutant
is, when it asks for exactly the original's launches and output. Either is a proof that no values
at that shape can witness it, not a sampled guess; "differs" proves nothing either way.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import torch

from kbm_toolkit.cuda.cubin import changed_kernels, sections
from kbm_toolkit.cuda.dryrun import Launch, meta_case, record_launches
from kbm_toolkit.cuda.nvrtc import compile_source, nvrtc_version
from kbm_toolkit.cuda.signatures import entry_points
from kbm_toolkit.errors import MissingCheckout, one_line
from kbm_toolkit.mutation.mutants import Mutant, generate
from kbm_toolkit.mutation.positions import stored
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.mutation.specialize import LaunchConfig, specialized_source
from kbm_toolkit.problems.input_spec import InputSpec, official_specs
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import Substrate, has_substrate, substrate_for
from kbm_toolkit.problems.tensors import hidden_inputs
from kbm_toolkit.store.sampling import in_sample
from kbm_toolkit.vocabulary import OTHER_CODE, SAME_CODE, MutantStatus

SAME, DIFFERS, UNDECIDED = SAME_CODE, OTHER_CODE, None
"""A verdict at one shape: the same machine code (or launches), different ones, or not decided
(the dry run or a compile failed: the note says which)."""


@dataclass(frozen=True)
class Verdict:
    """One mutant at one shape."""

    mutant: str
    shape: str
    same: int | None
    note: str = ""


@dataclass
class Shape:
    """One shape of a problem's inputs: the original's launches and output there, or why not."""

    key: str
    spec: InputSpec
    model: Any = None
    inputs: list[Any] | None = None
    launches: list[Launch] | None = None
    output: tuple[Any, ...] | None = None
    error: str = ""


def shapes_of(specs: Iterable[InputSpec]) -> list[InputSpec]:
    """One spec per distinct `shape_key`, the official shape (no overrides) first, then in order."""
    first: dict[str, InputSpec] = {}
    for spec in specs:
        first.setdefault(spec.shape_key, spec)
    return sorted(first.values(), key=lambda s: (s.shape != () or s.base == "kbv-hidden"))


def _describe(out: Any) -> tuple[Any, ...]:
    if not isinstance(out, torch.Tensor):
        return (type(out).__name__,)
    return (tuple(out.shape), out.stride(), out.storage_offset(), str(out.dtype))


def shape_case(problem: Problem, substrate: Substrate, spec: InputSpec) -> Shape:
    """The original's launches at `spec`'s shapes, on meta tensors (a failure is kept, not raised)."""
    shape = Shape(spec.shape_key, spec)
    try:
        shape.model, shape.inputs = meta_case(problem, dict(spec.shape) or None)
        if spec.base == "kbv-hidden":
            hidden = dict(spec.hidden)
            shape.inputs = hidden_inputs(problem, hidden["sha256"], hidden["config"], spec.seed, "meta")
        shape.launches, out = record_launches(substrate, shape.model, shape.inputs)
        shape.output = _describe(out)
    except MissingCheckout:
        raise  # not a verdict: judged with the checkout, the shape would decide (the problem is skipped, saying so)
    except Exception as e:  # any problem or launcher that cannot run on meta: undecided there
        shape.error = one_line(e)
    return shape


def configs_at(launches: list[Launch], kernels: set[str], launch: str | None) -> dict[str, list[LaunchConfig]]:
    """Each of `kernels`' distinct launch configs among `launches` (only the `NAME#K` launch of a
    placed mutant: the other launches run the original image)."""
    found: dict[str, list[LaunchConfig]] = {k: [] for k in kernels}
    counts: dict[str, int] = {}
    for x in launches:
        k = counts.get(x.kernel, 0)
        counts[x.kernel] = k + 1
        if x.kernel in found and (launch is None or launch == f"{x.kernel}#{k}"):
            config = LaunchConfig(x.kernel, x.grid, x.block, x.scalars)
            if config not in found[x.kernel]:
                found[x.kernel].append(config)
    return found


class Judge:
    """Decides a problem's mutants shape by shape, compiling each specialised source once."""

    def __init__(self, problem: Problem, substrate: Substrate, specs: Iterable[InputSpec], arch: str,
                 compile: Callable[[str, str, bool], bytes] | None = None) -> None:
        self.problem, self.substrate, self.arch = problem, substrate, arch
        self._compile = compile or (lambda source, a, cache: compile_source(source, a, use_cache=cache).cubin)
        self.shapes = [shape_case(problem, substrate, s) for s in shapes_of(specs)]
        self.kernels = set(entry_points(substrate.source))
        self._images: dict[str, dict[str, bytes | int]] = {}
        self.original = self._sections(substrate.source, cache=True)

    def _sections(self, source: str, cache: bool = False) -> dict[str, bytes | int]:
        """The sections of `source`'s image: mutants' from the cubin cache screening filled, the
        specialised sources' compiled here only (thousands, each used once or twice)."""
        if cache:
            return sections(self._compile(source, self.arch, True))
        if source not in self._images:
            self._images[source] = sections(self._compile(source, self.arch, False))
        return self._images[source]

    def judge(self, mutant: Mutant) -> Iterator[Verdict]:
        """The mutant's verdict at each shape in turn, up to the first where it differs (one left
        undecided, where the dry run or a compile failed, stops nothing)."""
        changed: set[str] = set()
        if mutant.target == "kernel":
            if entry_points(mutant.kernel_source) != entry_points(self.substrate.source):
                yield Verdict(mutant.id, self.shapes[0].key, DIFFERS, "its kernels' parameters differ")
                return
            changed = changed_kernels(self.original, self._sections(mutant.kernel_source, cache=True), self.kernels)
        for shape in self.shapes:
            verdict = self._at(mutant, shape, changed)
            yield verdict
            if verdict.same == DIFFERS:
                return

    def _at(self, mutant: Mutant, shape: Shape, changed: set[str]) -> Verdict:
        if shape.error:
            return Verdict(mutant.id, shape.key, UNDECIDED, f"the original's dry run: {shape.error}")
        if mutant.target == "launcher":
            try:
                launches, out = record_launches(self.substrate, shape.model, shape.inputs,
                                                launcher_source=mutant.launcher_source)
            except Exception as e:  # a launch the mutant's launcher gets wrong: it differs
                return Verdict(mutant.id, shape.key, DIFFERS,
                               one_line(e))
            same = launches == shape.launches and _describe(out) == shape.output
            return Verdict(mutant.id, shape.key, SAME if same else DIFFERS,
                           "the same launches" if same else "other launches")
        configs = configs_at(shape.launches or [], changed, mutant.launch)
        if not any(configs.values()):
            return Verdict(mutant.id, shape.key, SAME, "no changed kernel is launched")
        try:
            original = specialized_source(self.substrate.source, configs)
            before = self._sections(original)
            after = self._sections(specialized_source(mutant.kernel_source, configs))
        except Exception as e:  # a specialised source NVRTC rejects: undecided, said
            return Verdict(mutant.id, shape.key, UNDECIDED,
                           one_line(e))
        same = not changed_kernels(before, after, entry_points(original))
        launches = sum(len(c) for c in configs.values())
        return Verdict(mutant.id, shape.key, SAME if same else DIFFERS,
                       f"{'the same' if same else 'other'} machine code at its {launches} launch"
                       f"{'es' if launches > 1 else ''}")


@dataclass(frozen=True)
class ProblemTask:
    """One problem's mutants to judge, at the shapes of its inputs: what a judging process gets."""

    problem: Problem
    substrate: Substrate
    mutants: list[Mutant]
    specs: list[InputSpec]
    arch: str


def judge_task(task: ProblemTask) -> list[dict[str, Any]]:
    """Every verdict of one problem's mutants (a pool process runs it)."""
    judge = Judge(task.problem, task.substrate, task.specs, task.arch)
    return [{"mutant": v.mutant, "shape": v.shape, "same": v.same, "note": v.note}
            for m in task.mutants for v in judge.judge(m)]


def judged_already(verdicts: dict[str, int | None], shapes: set[str]) -> bool:
    """Whether stored verdicts settle a mutant at `shapes`: one of them where it differs (no set of
    these shapes hides it then), or a verdict at every one of them."""
    return any(verdicts.get(s) == DIFFERS for s in shapes) or shapes <= set(verdicts)


def stored_specs(store: Any, problem: Problem, substrate_hash: str) -> list[InputSpec]:
    """The official input, then every input the store found valid for the substrate at `substrate_hash`."""
    found = [InputSpec.from_record(json.loads(spec)) for spec in store.valid_input_specs(problem.key, substrate_hash)]
    return official_specs(problem, 1) + found


NO_MUTANTS = "no distinct mutants at its current source (kbm mutate)"


@dataclass
class Judged:
    """What `judge_problems` did: mutants judged per problem, and the problems it could not judge."""

    judged: dict[str, int] = field(default_factory=dict)
    settled: int = 0
    """Mutants whose stored verdicts already settled them: not judged again."""
    skipped: dict[str, str] = field(default_factory=dict)


def judge_problems(store: Any, problems: list[Problem], arch: str, workers: int | None = None,
                   on_problem: Callable[[str, int], None] | None = None,
                   extra: Callable[[Problem], list[InputSpec]] | None = None) -> Judged:
    """Judge every distinct mutant of `problems` (at their current substrates; of a problem evaluated
    on a sample, those in it, which scoring reads) at the shapes of the official input, of every
    input the store found valid and of `extra`'s inputs (a protocol's, before it runs: `kbm run`
    then launches nothing proven), in `workers` processes, keeping each problem's verdicts as it
    finishes; mutants stored verdicts settle already are left as they are."""
    rules, result, tasks = load_rules(), Judged(), []
    shares = store.samples()
    for problem in problems:
        if not has_substrate(problem):
            result.skipped[problem.key] = "no substrate"
            continue
        substrate = substrate_for(problem)
        rows = [r for r in store.mutants(problem.key) if r["status"] == MutantStatus.DISTINCT
                and r["substrate_hash"] == substrate.content_hash and in_sample(r["id"], shares.get(problem.key))]
        if not rows:
            result.skipped[problem.key] = NO_MUTANTS
            continue
        stored_at = stored_specs(store, problem, substrate.content_hash)
        more = (official_specs(problem, 1) + extra(problem)) if extra else []
        # judging stops at a mutant's first shape where it differs: `extra`'s shapes come right after
        # the official one, so a mutant that differs only at some other input's shape is still
        # decided at every shape of the protocol about to run
        specs = more + stored_at
        known = store.shape_verdicts(r["id"] for r in rows)
        groups = [{s.shape_key for s in specs}] + ([{s.shape_key for s in more}] if more else [])
        todo = [r for r in rows if not all(judged_already(known.get(r["id"], {}), g) for g in groups)]
        result.settled += len(rows) - len(todo)
        if todo:
            tasks.append(ProblemTask(problem, substrate, stored(todo, generate(substrate, rules)), specs, arch))
    if not tasks:
        return result
    with ProcessPoolExecutor(max(1, min(workers or mp.cpu_count(), len(tasks))), mp.get_context("spawn")) as pool:
        futures = {pool.submit(judge_task, task): task for task in tasks}
        for future in as_completed(futures):
            task = futures[future]
            key = task.problem.key
            try:
                rows = future.result()
            except Exception as e:  # one problem that cannot be judged stops no other
                result.skipped[key] = one_line(e)
                continue
            store.record_shape_verdicts(rows, arch, nvrtc_version())
            result.judged[key] = len(task.mutants)
            if on_problem:
                on_problem(key, len(task.mutants))
    return result
