"""How a protocol judges an output: which reference it computes, and which comparison it applies.

Every comparison kbm models has the form `|ref - out| <= atol + rtol * |s|` at every element,
where `s` is the candidate's output (`torch.allclose(ref, out)`, as KernelBench calls it) or the
reference (`torch.testing.assert_close(out, ref)`, which scales by the expected value). With
`ratio = rtol / atol` that is one number per output, the *margin* `max |ref - out| / (1 + ratio * |s|)`,
and the comparison passes iff the margin is at most `atol`. So a cell stores margins, not
verdicts: one margin per (reference, scale, ratio) decides every `atol` at once.

The store's columns hold the two margins every cell has: against the strict-fp32 reference,
ratio 1 scaled by the output (`margin`: allclose with atol = rtol) and ratio 0 (`max_abs`).
Others live in a JSON column under `margin_key(reference, scale, ratio)`. Where a cell lacks the
margin a judging needs, `bounds` brackets it from what is stored, and a verdict is given only
where the bracket decides it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

STRICT = "strict-fp32"
"""References in IEEE fp32: no TF32 in cuDNN convolutions or cuBLAS matmuls (kbm's own default)."""
PYTORCH_DEFAULT = "pytorch-default"
"""References as PyTorch ships: cuDNN convolutions in TF32 (`torch.backends.cudnn.allow_tf32`
is True by default), cuBLAS matmuls in fp32."""
REFERENCES = (STRICT, PYTORCH_DEFAULT)

COMPARISONS = {"allclose": "output", "assert_close": "reference", "absolute": "output"}
"""Comparison names a protocol may declare, and whose magnitude `rtol` multiplies."""

ASSERT_CLOSE_DEFAULTS = {"float32": (1e-5, 1.3e-6), "float64": (1e-7, 1e-7), "float16": (1e-5, 1e-3),
                         "bfloat16": (1e-5, 1.6e-2)}
"""`torch.testing.assert_close`'s (atol, rtol) by dtype; a protocol naming `assert_close` without
`atol`/`rtol` gets its `dtype`'s (float32 unless it says)."""


def margin_key(reference: str, scale: str, ratio: float) -> str:
    """The name a margin is stored under, e.g. `pytorch-default|output:1` (ratio 0 has no scale)."""
    return f"{reference}|{'output' if ratio == 0 else scale}:{ratio:.6g}"


@dataclass(frozen=True)
class Judging:
    """One protocol's verdict rule: its reference environment and its comparison."""

    atol: float
    rtol: float
    comparison: str = "allclose"
    reference: str = STRICT

    @property
    def scale(self) -> str:
        """Whose magnitude `rtol` multiplies: `output` or `reference`."""
        return COMPARISONS[self.comparison]

    @property
    def ratio(self) -> float:
        """rtol / atol: with atol, all that the margin depends on."""
        return self.rtol / self.atol

    @property
    def key(self) -> str:
        """The stored margin this judging reads."""
        return margin_key(self.reference, self.scale, self.ratio)

    @property
    def is_default(self) -> bool:
        """Judged by the store's `margin` column alone: allclose, atol = rtol, strict fp32."""
        return self.reference == STRICT and self.key == margin_key(STRICT, "output", 1.0)

    def words(self) -> str:
        """For people: `allclose atol 1e-05 rtol 0.001, pytorch-default reference`."""
        tol = f"atol = rtol = {self.atol:g}" if self.atol == self.rtol else f"atol {self.atol:g} rtol {self.rtol:g}"
        return f"{self.comparison} {tol}, {self.reference} reference"

    def with_tolerances(self, atol: float, rtol: float) -> "Judging":
        """The same reference and comparison at other tolerances (`kbm audit --atol/--rtol`)."""
        return Judging(atol, rtol, self.comparison, self.reference)

    def with_reference(self, reference: str) -> "Judging":
        """The same comparison against another reference (`kbm audit --reference`)."""
        return Judging(self.atol, self.rtol, self.comparison, reference)

    def decide(self, outcome: str, margin: float | None, max_abs: float | None,
               margins: Mapping[str, float] | None, ref_abs_max: float | None = None) -> bool | None:
        """Whether this judging passes a stored result (a cell or an input check); None where the
        stored margins do not decide it. A result that is not `pass` fails every comparison."""
        if outcome != "pass":
            return False
        low, high = bounds(self, margin, max_abs, margins, ref_abs_max)
        if high <= self.atol:
            return True
        if low > self.atol:
            return False
        return None


def stored_margin(key: str, margin: float | None, max_abs: float | None,
                  margins: Mapping[str, float] | None) -> float | None:
    """The margin stored under `key`: the columns for the strict ones, else the JSON column."""
    if key == margin_key(STRICT, "output", 1.0):
        return math.inf if margin is None else margin
    if key == margin_key(STRICT, "output", 0.0):
        return math.inf if max_abs is None else max_abs
    if margins and key in margins:
        value = margins[key]
        return math.inf if value is None else value
    return None


def bounds(judging: Judging, margin: float | None, max_abs: float | None, margins: Mapping[str, float] | None,
           ref_abs_max: float | None = None) -> tuple[float, float]:
    """The judging's margin, bracketed (low, high) from what is stored; equal where it is stored.

    With d = |ref - out| and s the scaled side: ratio r <= 1 gives d/(1+|s|) <= d/(1+r|s|) <= d,
    and r >= 1 gives d/(r(1+|s|)) <= d/(1+r|s|) <= d/(1+|s|). Against another reference, only
    that reference's own stored margins bracket it.
    """
    exact = stored_margin(judging.key, margin, max_abs, margins)
    if exact is not None:
        return exact, exact
    ref, r = judging.reference, judging.ratio
    unit = stored_margin(margin_key(ref, "output", 1.0), margin, max_abs, margins)
    absolute = stored_margin(margin_key(ref, "output", 0.0), margin, max_abs, margins)
    low, high = 0.0, math.inf
    if absolute is not None:
        high = absolute
        if judging.scale == "reference" and ref_abs_max is not None:
            low = absolute / (1 + r * ref_abs_max)  # |ref| <= max |ref| everywhere
    if judging.scale == "output" and unit is not None:
        if r <= 1:
            low = max(low, unit)
        else:
            low, high = max(low, unit / r), min(high, unit)
    return low, high


def judging_from_table(table: Mapping[str, Any], where: str) -> Judging:
    """A protocol table's `tolerance`, `atol`, `rtol`, `comparison`, `dtype` and `reference`, checked;
    ValueError naming the key on a bad one."""
    comparison = table.get("comparison", "allclose")
    if comparison not in COMPARISONS:
        raise ValueError(f"{where}: comparison must be one of {', '.join(COMPARISONS)}, got {comparison!r}")
    reference = table.get("reference", STRICT)
    if reference not in REFERENCES:
        raise ValueError(f"{where}: reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
    atol, rtol = table.get("atol", table.get("tolerance")), table.get("rtol", table.get("tolerance"))
    if comparison == "assert_close" and "tolerance" not in table:
        dtype = table.get("dtype", "float32")
        if dtype not in ASSERT_CLOSE_DEFAULTS:
            raise ValueError(f"{where}: dtype must be one of {', '.join(ASSERT_CLOSE_DEFAULTS)}, got {dtype!r}")
        default_atol, default_rtol = ASSERT_CLOSE_DEFAULTS[dtype]
        atol = table.get("atol", default_atol)
        rtol = table.get("rtol", default_rtol)
    if comparison == "absolute":
        if "rtol" in table and table["rtol"] != 0:
            raise ValueError(f"{where}: an absolute comparison has no rtol")
        rtol = 0.0
    for name, value in (("atol", atol), ("rtol", rtol)):
        if value is None:
            raise ValueError(f"{where}: give tolerance (atol = rtol), or atol and rtol")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or math.isnan(value):
            raise ValueError(f"{where}: {name} must be a non-negative number, got {value!r}")
    if not atol > 0:
        raise ValueError(f"{where}: atol must be positive, got {atol!r}")
    return Judging(float(atol), float(rtol), comparison, reference)


Margin = tuple[str, str, float]
"""(reference, scale, ratio): one margin an evaluation computes for every cell."""


def extra_margins(judgings: list[Judging]) -> list[Margin]:
    """The margins beyond the store's two columns that make every judging in `judgings` exact, and
    bracket any atol/rtol against each non-strict reference (its ratio-1 and ratio-0 margins)."""
    wanted: set[Margin] = set()
    for j in judgings:
        wanted.add((j.reference, "output" if j.ratio == 0 else j.scale, j.ratio))
        if j.reference != STRICT:
            wanted |= {(j.reference, "output", 1.0), (j.reference, "output", 0.0)}
    return sorted(wanted - {(STRICT, "output", 1.0), (STRICT, "output", 0.0)})
