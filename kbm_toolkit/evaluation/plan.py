"""Planning one problem of a run, on the parent side: what the store already holds of its matrix,
which mutants still have work, and (in the compile pool) their images compiled for the worker."""

from __future__ import annotations

import json
from collections import deque
from concurrent.futures import Executor, Future
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.errors import KbmError
from kbm_toolkit.evaluation.first_kill import FirstKill, Settled
from kbm_toolkit.judging import Margin, margin_key
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.positions import stored
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.problems.substrate import Substrate, substrate_for
from kbm_toolkit.store import in_sample
from kbm_toolkit.vocabulary import REFERENCE_RAISED, SAME_CODE, STOPPING_OUTCOMES, MutantStatus


@dataclass
class ProblemPlan:
    """Everything one worker task needs for a problem, built on the parent side."""

    problem: Problem
    substrate: Substrate
    substrate_hash: str
    original: dict[str, Any]
    mutants: list[dict[str, Any]]
    probe: InputSpec | None
    specs: list[InputSpec]
    margins: list[Margin] = field(default_factory=list)
    """Margins beyond the store's columns every cell and check of the plan computes."""


class Job(NamedTuple):
    """A problem with work left, as the compile pool gets it: `plan_problem`'s first arguments."""

    problem: Problem
    substrate: Substrate
    substrate_hash: str
    mutants: dict[str, dict[str, Any]]
    """The stored rows of the mutants with work left: only these are compiled."""
    specs: list[InputSpec]


@dataclass
class StoredProgress:
    """What the store already holds of one problem's matrix: where `run_problem` resumes from."""

    done: set[tuple[str, str]]
    """(mutant, input) pairs with nothing to run: a stored cell, an invalid input, or (`--first-kill`)
    protocols that already detect the mutant."""
    checked: dict[str, dict[str, Any] | None]
    """Input id -> the correct kernel's stored margin and time on it (None: the input is invalid)."""
    settled: Settled | None
    """With `--first-kill`: which protocols the stored cells show detecting each mutant."""
    probe_crashes: set[str]
    """Mutants with a stored crash or timeout on the probe input."""
    crashed: set[str]
    """Mutants with a stored crash or timeout on one of the run's inputs."""
    recheck: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Valid inputs of the run stored without some of its margins: their stored margin and max_abs."""
    rechecking: set[str] = field(default_factory=set)
    """Inputs of the run whose stored check is a raised reference (`check_again`): checked again,
    and given mutants by a later run only if the check now passes (`mutants_with_work`)."""


def check_again(check: dict[str, Any]) -> bool:
    """Whether a run checks a stored input again: its reference raised there, and the cause may be
    kbm's own, since fixed (a list-valued size once raised in every reference), or a package since
    installed; any other verdict stands."""
    return not check["valid"] and (check.get("note") or "").startswith(REFERENCE_RAISED)


def probe_spec(problem: Problem, substrate: Substrate) -> InputSpec:
    """A tiny input: the smallest shape the substrate declares for its gate, else the official one
    (the built-in `probe` protocol's one input, so its cells are witnesses like any other)."""
    return InputSpec.make(problem.key, trial_seeds(1)[0], shape=substrate.probe_shape, label="probe")


def stored_mutants(store: Any, problem: Problem, sample: float | None = None
                   ) -> tuple[Substrate, str, dict[str, dict[str, Any]]]:
    """The substrate, its hash, and the stored mutants an evaluation runs (distinct or quarantined),
    only those in the `sample` share when one is given."""
    substrate = substrate_for(problem)
    sh = substrate.content_hash
    current = [r for r in store.mutants(problem.key) if r["substrate_hash"] == sh]
    rows = {r["id"]: r for r in current if r["status"] in (MutantStatus.DISTINCT, MutantStatus.QUARANTINED) and in_sample(r["id"], sample)}
    if not rows and (sample is None or not current):
        raise KbmError(f"no mutants of {problem.key} at its current source: run `kbm mutate {problem.key}` first")
    return substrate, sh, rows


PLAN_PART = 16
"""Mutants one compile process plans at a time. A problem planned whole in one process kept the
GPU workers waiting at a run's start: on a fresh H100 (run 72, 2026-12-05) the first three
problems' plans (154 to 253 conv mutants, 0.1-0.2 s each to compile) took about 80 s while the
other compile processes planned problems further on."""

Part = tuple[int, int | None]
"""A slice of a problem's stored mutants in generation order: [start, end), end None for the rest."""


def plan_parts(n: int, size: int | None = PLAN_PART) -> list[Part]:
    """The parts a problem with `n` mutants to compile is planned in: at most `size` each (None: one part)."""
    if not size or n <= size:
        return [(0, None)]
    return [(a, a + size if a + size < n else None) for a in range(0, n, size)]


def plan_problem(problem: Problem, substrate: Substrate, sh: str, rows: dict[str, dict[str, Any]],
                 specs: list[InputSpec], arch: str, probe: bool, rules: list[Any] | None = None,
                 margins: list[Margin] | None = None, part: Part = (0, None)) -> ProblemPlan:
    """Compile the substrate (hash `sh`) and the mutants in `rows` (NVRTC, cached); of those, in
    the order kbm's rules make them, only the `part` slice."""
    original = compile_source(substrate.source, arch, where=str(substrate.kernel_path))
    made = stored(rows.values(), generate(substrate, rules if rules is not None else load_rules())) if rows else []
    made = made[part[0]:part[1]]
    mutants = []
    for m in made:
        image = compile_source(m.kernel_source, arch) if m.target == "kernel" else original
        mutants.append({"id": m.id, "status": rows[m.id]["status"], "image": asdict(image),
                        "kernel_source": m.kernel_source,
                        "launcher_source": m.launcher_source if m.target == "launcher" else None,
                        "launch": m.launch})
    return ProblemPlan(problem, substrate, sh, asdict(original), mutants,
                       probe_spec(problem, substrate) if probe else None, specs, list(margins or []))


def joined(parts: list[ProblemPlan]) -> ProblemPlan:
    """One problem's plan from the plans of its parts, in order."""
    return replace(parts[0], mutants=[m for p in parts for m in p.mutants])


def plans_ahead(pool: Executor, jobs: Iterable[Job], depth: int, args: tuple[Any, ...],
                size: int | None = PLAN_PART, stopped: Callable[[], bool] = lambda: False
                ) -> Iterator[tuple[Job, ProblemPlan | Exception]]:
    """Each job's plan, in order, compiled in `pool` in parts of at most `size` mutants
    (`plan_parts`), `depth` parts in flight; `args` are `plan_problem`'s after the job's. A job
    whose part raised comes with that exception instead. Once `stopped()`, nothing more is sent."""
    queued = ((job, part) for job in jobs for part in plan_parts(len(job.mutants), size))
    ahead: deque[tuple[Job, Part, Future]] = deque()

    def submit() -> None:
        following = next(queued, None)
        if following is not None and not stopped():
            job, part = following
            ahead.append((job, part, pool.submit(plan_problem, *job, *args, part=part)))

    for _ in range(depth):
        submit()
    parts: list[ProblemPlan] = []
    error: Exception | None = None
    while ahead:
        job, part, planned = ahead.popleft()
        submit()
        try:
            parts.append(planned.result())
        except Exception as e:  # e.g. a substrate edited since it was mutated
            error = error or e
        if part[1] is None:  # the job's last part
            yield job, error if error is not None else joined(parts)
            parts, error = [], None


def stored_progress(store: Any, problem: Problem, sh: str, rows: dict[str, dict[str, Any]], specs: list[InputSpec],
                    probe_input: InputSpec | None, first_kill: list[Any] | None = None,
                    margins: list[Margin] | None = None, witnesses: Iterable[float] = ()) -> StoredProgress:
    """What the store holds of `problem` (substrate hash `sh`) for the mutants in `rows`; with
    `first_kill` (the run's protocols), also what its stored cells already settle on `specs`, judged
    at the `witnesses` tolerances too (`FirstKill.of`); with `margins`, which valid inputs of
    `specs` are stored without some of them."""
    stored = {pair: cell for pair, cell in store.problem_cells(problem.key).items() if pair[0] in rows}
    inputs = [*specs, *([probe_input] if probe_input else [])]
    done = set(stored) | proven_pairs(store, rows, inputs)
    stored_checks = store.checked_inputs(problem.key, sh)
    checks = {i: c for i, c in stored_checks.items() if not check_again(c)}
    rechecking = {s.id for s in inputs if s.id in stored_checks and s.id not in checks}
    invalid = {i for i, c in checks.items() if not c["valid"]}
    done |= {(m, i) for m in rows for i in invalid}
    settled = None
    if first_kill:  # what stored cells already settle is not asked for again
        settled = Settled(FirstKill.of(first_kill, problem, witnesses),
                          {i: c["margin"] for i, c in checks.items() if c["valid"]})
        for (m, i), (outcome, margin) in stored.items():
            settled.cell(m, i, outcome, margin)
        # an input valid at no tolerance the rule judges needs no cell even on an unsettled mutant
        done |= {(m, s.id) for m in rows for s in specs if not settled.needed(m, s.id)}
    checked = {i: {"margin": c["margin"], "kernel_ms": c["kernel_ms"]} if c["valid"] else None
               for i, c in checks.items()}
    wanted = {margin_key(*m) for m in margins or []}
    recheck = {s.id: {"margin": checks[s.id]["margin"], "max_abs": checks[s.id]["max_abs"]} for s in specs
               if s.id in checks and checks[s.id]["valid"]
               and not wanted <= set(json.loads(checks[s.id].get("margins") or "{}"))}
    return StoredProgress(done, checked, settled, stopped_on(store, [probe_input] if probe_input else []),
                          # under --first-kill a stored crash settles its protocols like any detection
                          set() if settled else stopped_on(store, specs), recheck, rechecking)


def proven_pairs(store: Any, mutants: Iterable[str], specs: list[InputSpec]) -> set[tuple[str, str]]:
    """The (mutant, input) pairs no launch need measure: `kbm equivalence` proved the mutant runs
    the original's machine code at the input's shapes, so its output there is the correct kernel's
    (scoring reads them so too, `analysis.matrix`)."""
    shapes = [(s.id, s.shape_key) for s in specs]  # each spec's key once, not once per mutant
    return {(m, i) for m, found in store.shape_verdicts(mutants).items() for i, shape in shapes
            if found.get(shape) == SAME_CODE}


def mutants_with_work(progress: StoredProgress, rows: dict[str, dict[str, Any]], specs: list[InputSpec],
                      probe_input: InputSpec | None, rerun_crashers: bool) -> dict[str, dict[str, Any]]:
    """The distinct mutants of `rows` that `run_problem` has work for: a cell the store lacks,
    or a crash on the probe still to quarantine. Only these are compiled and sent to a worker.

    A run at a wider share compiled, and sent with each task, every mutant its narrower runs had
    finished (nine in ten of them at the last tenth); a resumed run, every problem it had finished
    (its workers then waited on compiles for 57% of their time).
    """
    done, left = progress.done, {}
    # an input whose reference raised is checked again first, with no mutant compiled for it: it
    # almost always raises again (a size the reference cannot take)
    probe_due = probe_input is not None and probe_input.id not in progress.rechecking
    due = [s for s in specs if s.id not in progress.rechecking]
    for m, row in rows.items():
        if row["status"] != MutantStatus.DISTINCT:
            continue  # quarantined on the probe: never run again
        if probe_due and ((m, probe_input.id) not in done or m in progress.probe_crashes):  # type: ignore[union-attr]
            left[m] = row
        elif (rerun_crashers or m not in progress.crashed) and any((m, s.id) not in done for s in due):
            left[m] = row
    return left


def stopped_on(store: Any, specs: list[InputSpec]) -> set[str]:
    """Mutants with a stored crash or timeout on one of `specs` (input ids name their problem).

    On this run's inputs: a mutant that crashed only on other inputs runs here, since a protocol
    made of these inputs has not seen its crash and needs its cells. On the probe: mutants a
    killed run left unquarantined."""
    return store.stopped_on([s.id for s in specs], STOPPING_OUTCOMES)
