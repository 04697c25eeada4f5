"""Which mutants a conformance run submits: per problem, a hash-drawn few of those whose verdict
under a protocol the store decides.

kbm's verdict is `analysis.score.run_protocol`'s: a mutant is detected when a valid input of the
protocol kills it at the protocol's tolerance. It is decided when it is detected, or when every
input of the protocol has a cell for it (a run with `--first-kill` or a crash stop leaves gaps).
A problem is comparable only where the checker, too, can pass the correct kernel: every input of
the protocol checked and valid (no false rejection, no dropped input, none rejected against the
protocol's own reference), the local substrate and the checkout's problem file the ones the store
evaluated. Mutants with a `timeout` cell anywhere are left out: they would hang the real eval.

Both sides are judged against one reference environment (`reference`): strict fp32 (kbm's stored
margins; the eval runs with TF32 off) or the benchmark's as it ships (`pytorch-default`: TF32
cuDNN convolutions), which needs a store holding margins against that reference.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from kbm_toolkit.analysis.judged import judged
from kbm_toolkit.analysis.matrix import Matrix, killed
from kbm_toolkit.analysis.score import run_protocol
from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import STRICT, Judging
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import has_substrate, substrate_for
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import Outcome

SALT = "kbm-conformance"
"""Mixed into the hash that orders each problem's mutants: a fixed draw, the same for every protocol."""

DEFAULT_PROBLEMS = (
    # elementwise (every level-1 activation takes a 6.4 GB input: these two are the small ones)
    "level1/12_Matmul_with_diagonal_matrices_",   # diag(A) @ B as a broadcast product: A (4096,), B 4096^2
    "level1/88_MinGPTNewGelu",                    # x (8192, 8192)
    "level2/76_Gemm_Add_ReLU",                    # x (1024, 8192), Linear 8192^2, bias add and ReLU
    # reductions
    "level1/40_LayerNorm",                        # x (16, 64, 256, 256) normalised over its last three dims
    "level2/18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp",  # x (1024, 8192) -> (1024, 1)
    "level2/98_Matmul_AvgPool_GELU_Scale_Max",    # x (1024, 8192) -> (1024,)
    # convolutions
    "level1/72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_",  # x (8, 32, 12, 24, 48)
    "level1/66_conv_standard_3D__asymmetric_input__asymmetric_kernel",  # x (8, 3, 16, 128, 128)
    "level2/6_Conv3d_Softmax_MaxPool_MaxPool",    # x (128, 3, 16, 32, 32)
    "level2/24_Conv3d_Min_Softmax",               # x (128, 3, 24, 32, 32)
    # matmuls
    "level1/1_Square_matrix_multiplication_",     # A, B 4096^2
    "level1/10_3D_tensor_matrix_multiplication",  # A (16, 1024, 2048), B (2048, 768)
    "level2/12_Gemm_Multiply_LeakyReLU",          # x (1024, 8192), Linear 8192^2
)
"""KernelBench problems whose inputs are small enough for the CPU draws of the real evals
(seconds per submission, not minutes), covering elementwise, reduction, convolution and matmul
kernels."""


@dataclass
class Candidate:
    """One submission to make: a stored mutant (or the correct substrate) and kbm's verdict on it."""

    problem: str
    mutant: str | None
    """None: the correct substrate, a control every checker should pass."""
    name: str
    family: str
    substrate_hash: str
    source_hash: str | None
    detected: bool
    """kbm's stored verdict under the protocol (the control: False)."""
    cells: list[dict[str, Any]] = field(default_factory=list)
    """Per input of the protocol: label, input id, the cell's outcome and margin, the correct
    kernel's margin on it."""

    @property
    def key(self) -> str:
        """The mutant id, or `substrate` for the control."""
        return self.mutant or "substrate"


@dataclass
class Selection:
    """The candidates for one protocol, and what was left out and why."""

    protocol: str
    tolerance: float
    candidates: list[Candidate] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Problem -> why none of its mutants can be compared."""
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """Problem -> scored, selectable (decided), detected among them, timeout, undecided, chosen."""


def draw_key(problem: str, mutant: str, salt: str = SALT) -> str:
    """The hash that orders a problem's mutants for the draw."""
    return hashlib.sha256(f"{salt}\0{problem}\0{mutant}".encode()).hexdigest()


def judging_for(protocol: Protocol, reference: str = STRICT) -> Judging:
    """The protocol's comparison, against `reference`."""
    return replace(protocol.judge, reference=reference)


def _unusable(mx: Matrix, protocol: Protocol, judging: Judging, problem: Problem,
              stored: dict[str, Any]) -> tuple[str, Any]:
    """Why `problem` cannot be compared under `protocol` ("" when it can), and run_protocol's result."""
    key = problem.key
    if stored.get("source_hash") and problem.source_hash != stored["source_hash"]:
        return f"the problem file {problem.path} is not the one the store evaluated", None
    if not has_substrate(problem):
        return "no substrate here", None
    hashes = {m["substrate_hash"] for m in mx.mutants.values()}
    if hashes != {substrate_for(problem).content_hash}:
        return "the local substrate is not the one the store's mutants were made from", None
    try:
        specs = protocol.specs(mx.problem)
    except KbmError as e:
        return f"no inputs: {e.line()}", None
    if not specs:
        return f"{protocol.name} does not check it", None
    result = run_protocol(protocol, [mx], judging=judging)
    if result.missing_checks.get(key):
        return (f"{len(result.missing_checks[key])} of its inputs were never checked "
                f"(`kbm run --inputs {protocol.name} {key}` fills them)"), result
    if result.dropped:
        return f"{result.dropped} of its inputs have an unusable reference (dropped)", result
    if result.unmeasured_as_run or result.undecided_checks:
        return (f"the store has no margins against the {judging.reference} reference on "
                f"{result.unmeasured_as_run + result.undecided_checks} of its inputs"), result
    rejections = [r for r in result.false_rejections if r["problem"] == key] + list(result.rejected_as_run)
    if rejections:
        worst = rejections[0]
        return (f"the correct kernel fails {len(rejections)} of its inputs ({worst['label']}: margin "
                f"{worst['margin']}), so the checker rejects every submission"), result
    return "", result


def _decided(mx: Matrix, view: Matrix, input_ids: list[str], detected: set[str]) -> dict[str, str]:
    """Mutant -> `decided`, `timeout` or `undecided` on `input_ids`, from `view` (`mx` judged as the
    protocol judges: NaN where its stored margins do not decide a cell)."""
    by_mutant: dict[str, dict[str, tuple[str, float | None]]] = defaultdict(dict)
    for (m, i), cell in view.cells.items():
        by_mutant[m][i] = cell
    out = {}
    for m in mx.mutants:
        cells = by_mutant.get(m, {})
        if any(outcome == Outcome.TIMEOUT for outcome, _ in cells.values()):
            out[m] = "timeout"
        elif m in detected:
            out[m] = "decided"
        elif all(i in cells and not (cells[i][1] is not None and math.isnan(cells[i][1])) for i in input_ids):
            out[m] = "decided"  # every input has a cell, none undecided at the protocol's judging
        else:
            out[m] = "undecided"
    return out


def select_problem(mx: Matrix, protocol: Protocol, problem: Problem, stored: dict[str, Any],
                   rows: dict[str, dict[str, Any]], per_problem: int, salt: str = SALT,
                   control: bool = True, reference: str = STRICT) -> tuple[list[Candidate], str, dict[str, int]]:
    """One problem's candidates under `protocol` against `reference` (its control first), why it
    has none, and its counts; `rows` are the store's mutant rows of the problem by id."""
    judging = judging_for(protocol, reference)
    why, result = _unusable(mx, protocol, judging, problem, stored)
    counts = {"scored": len(mx.mutants)}
    if why:
        return [], why, counts
    t = result.tolerance
    specs = protocol.specs(mx.problem)
    ids = [s.id for s in specs]
    detected = result.detected.get(problem.key, set())
    view = mx if judging.is_default else judged([mx], judging).matrices[0]
    state = _decided(mx, view, ids, detected)
    decided = sorted((m for m, s in state.items() if s == "decided"), key=lambda m: draw_key(problem.key, m, salt))
    chosen = decided[:per_problem]
    counts.update(selectable=len(decided), detected=sum(m in detected for m in decided),
                  timeout=sum(s == "timeout" for s in state.values()),
                  undecided=sum(s == "undecided" for s in state.values()), chosen=len(chosen))

    def cells_of(m: str | None) -> list[dict[str, Any]]:
        out = []
        for s in specs:
            check = mx.checks.get(s.id) or {}
            outcome, margin = (check.get("outcome"), check.get("margin")) if m is None else mx.cells.get((m, s.id), (None, None))
            judged_cell = view.cells.get((m, s.id)) if m is not None else None
            out.append({"label": s.label, "input": s.id, "outcome": outcome, "margin": margin,
                        "kills": bool(judged_cell is not None and killed(judged_cell, t)),
                        "correct_margin": check.get("margin")})
        return out

    sh = next(iter({r["substrate_hash"] for r in mx.mutants.values()}))
    out = [Candidate(problem.key, None, f"{problem.key} (the correct substrate)", "", sh, None, False,
                     cells_of(None))] if control else []
    for m in chosen:
        row = {**rows.get(m, {}), **mx.mutants[m]}
        out.append(Candidate(problem.key, m, row.get("name") or m, row.get("family") or "", row["substrate_hash"],
                             row.get("source_hash"), m in detected, cells_of(m)))
    return out, "", counts


def select(store: Any, matrices: dict[str, Matrix], protocol: Protocol, problems: list[Problem],
           per_problem: int, salt: str = SALT, control: bool = True, reference: str = STRICT) -> Selection:
    """The candidates of `problems` (from the checkout the checker reads) under `protocol` against
    `reference`; `matrices` are the store's, by problem key (`load_matrices`, every cell loaded)."""
    selection = Selection(protocol.name, protocol.tolerance)
    stored_rows = store.problem_rows()
    for problem in problems:
        mx = matrices.get(problem.key)
        if mx is None:
            selection.skipped[problem.key] = "no scored mutants in the store (not mutated, not evaluated or unrefereeable)"
            continue
        rows = {r["id"]: r for r in store.mutants(problem.key)}
        found, why, counts = select_problem(mx, protocol, problem, stored_rows.get(problem.key, {}), rows,
                                            per_problem, salt, control, reference)
        selection.counts[problem.key] = counts
        if why:
            selection.skipped[problem.key] = why
        selection.candidates += found
    return selection
