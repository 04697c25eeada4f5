"""Tolerance vacuity against reduction length (the paper's Fig. 2b, left), from the reference
magnitudes the input checks store.

An all-zeros output passes allclose at atol = a, rtol = r exactly when every |f| <= a / (1 - r):
when the largest |reference output| is under that line. Rows that sum to one over a reduction of
length d (softmax and kin) have mean |f| = 1/d, so their largest |f| falls as d grows, through
every tolerance's line; for torch.rand rows (the official draw) it is about e / ((e - 1) d).
"""

from __future__ import annotations

import math
import re
from statistics import median
from typing import Any

ROW_SUM_SLACK = 0.05
"""How far mean |f| times `dim` may be from 1 for a problem's rows to count as summing to one."""

_OFFICIAL_TRIAL = re.compile(r"^official trial \d+$")
"""The official draws at the problem's own sizes (not the gate's resized ones)."""

RAND_ROW_PEAK = math.e / (math.e - 1)
"""d times the largest softmax output of a row of d draws from U[0, 1), as d grows."""


def zeros_line(atol: float, rtol: float) -> float:
    """The largest |reference output| under which an all-zeros output passes allclose."""
    return atol / (1 - rtol)


def zeros_pass(largest: float, atol: float, rtol: float) -> bool:
    """Whether an all-zeros output passes allclose against a reference whose largest |f| is `largest`."""
    return largest <= zeros_line(atol, rtol)


def crossover(atol: float, rtol: float) -> float:
    """The reduction length past which an all-zeros output passes a torch.rand softmax row's check."""
    return RAND_ROW_PEAK / zeros_line(atol, rtol)


def normalized_rows(matrices: list[Any]) -> list[tuple[str, int, float]]:
    """(problem, d, largest |f|) for each problem whose official outputs' rows sum to one over its
    `dim` constant (mean |f| · dim within `ROW_SUM_SLACK` of 1 on every official trial), the
    largest |f| being the median over its official trials; by d."""
    found = []
    for mx in matrices:
        d = mx.problem.constants().get("dim")
        checks = [c for c in mx.checks.values() if _OFFICIAL_TRIAL.match(str(c.get("label", "")))
                  and c.get("ref_abs_max") is not None and c.get("ref_abs_mean") is not None]
        if not isinstance(d, int) or d < 2 or not checks:
            continue
        if all(abs(c["ref_abs_mean"] * d - 1) <= ROW_SUM_SLACK for c in checks):
            found.append((mx.problem.key, d, median(c["ref_abs_max"] for c in checks)))
    return sorted(found, key=lambda r: r[1])
