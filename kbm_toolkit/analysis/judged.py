"""The kill matrix as a protocol that judges otherwise sees it: another atol/rtol ratio, another
comparison, or its benchmark's own reference (`kbm_toolkit.judging`).

Cells are re-judged from their stored margins; where those do not decide a cell it counts as not
killing (so a score is a lower bound) and is counted. Validity stays with the strict-fp32
reference, as witnesses do: a cell without margins against the protocol's reference is judged
against strict fp32 and counted too. What the correct kernel does against the protocol's own
reference is kept per input: there, a failure is a false rejection the benchmark makes as it runs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from kbm_toolkit.analysis.matrix import Matrix
from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import STRICT, Judging

Verdicts = dict[str, bool | None]


@dataclass
class JudgedMatrices:
    """Matrices whose cells and checks say what `judging` makes of them, and what it could not tell."""

    judging: Judging
    matrices: list[Matrix]
    undecided_cells: int = 0
    """Cells whose stored margins bracket the judging's margin across its atol: counted as passing."""
    strict_cells: int = 0
    """Cells with no margin against the judging's reference: judged against strict fp32 instead."""
    undecided_checks: int = 0
    """Valid inputs whose correct-kernel margins do not decide validity at this judging: left out."""
    as_run: dict[str, Verdicts] = field(default_factory=dict)
    """Problem -> input -> whether the correct kernel passes against the judging's own reference
    (None: no margin against it stored). Only for a judging whose reference is not strict fp32."""


def _on_reference(margins: dict[str, Any], reference: str) -> bool:
    return any(k.startswith(f"{reference}|") for k in margins)


def judged(matrices: list[Matrix], judging: Judging) -> JudgedMatrices:
    """`matrices` re-judged by `judging`: each cell becomes (outcome, 0 or +inf, or NaN where
    undecided) so that `killed(cell, judging.atol)` is its verdict; each check's `margin` likewise."""
    strict = judging.with_reference(STRICT)
    out = JudgedMatrices(judging, [])
    for mx in matrices:
        if mx.details is None:
            raise KbmError("internal: matrices loaded without details cannot be re-judged")
        checks, as_run = {}, {}
        for i, check in mx.checks.items():
            checks[i], as_run[i] = _check(check, strict, judging, out)
        if judging.reference != STRICT:
            out.as_run[mx.problem.key] = as_run
        cells = {}
        for pair, (outcome, margin) in mx.cells.items():
            max_abs, margins = mx.details.get(pair) or (None, {})
            ref_abs_max = (mx.checks.get(pair[1]) or {}).get("ref_abs_max")
            by = judging
            if judging.reference != STRICT and not _on_reference(margins, judging.reference):
                by = strict
                out.strict_cells += outcome == "pass"
            passes = by.decide(outcome, margin, max_abs, margins, ref_abs_max)
            if passes is None:
                out.undecided_cells += 1
            cells[pair] = (outcome, 0.0 if passes else math.nan if passes is None else math.inf)
        out.matrices.append(replace(mx, checks=checks, cells=cells, _columns=None, _killed={}, _stopped=None))
    return out


def _check(check: dict[str, Any], strict: Judging, judging: Judging, out: JudgedMatrices
           ) -> tuple[dict[str, Any], bool | None]:
    """One input check judged for validity (strict fp32), and as the benchmark runs it."""
    margins = json.loads(check.get("margins") or "{}") if isinstance(check.get("margins"), str) \
        else (check.get("margins") or {})
    if not check["valid"]:
        return check, None
    args = (check["outcome"], check["margin"], check["max_abs"], margins, check.get("ref_abs_max"))
    valid = strict.decide(*args)
    if valid is None:
        out.undecided_checks += 1
    as_run = None
    if judging.reference != STRICT and _on_reference(margins, judging.reference):
        as_run = judging.decide(*args)
    return {**check, "valid": bool(valid), "margin": 0.0 if valid else math.inf, "undecided": valid is None}, as_run
