"""How far a candidate output is from the reference, in the terms of KernelBench's allclose.

`torch.allclose(ref, out, atol=t, rtol=t)` passes iff |ref - out| <= t * (1 + |out|) everywhere,
so the margin max |ref - out| / (1 + |out|) decides every tolerance at once: pass iff margin <= t.
Other comparisons (`kbm_toolkit.judging`) ask for their own margins by (scale, ratio).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from kbm_toolkit.vocabulary import Outcome


@dataclass(frozen=True)
class Comparison:
    """Margin and largest absolute error of one output against its reference."""

    outcome: Outcome
    margin: float
    """max |ref - out| / (1 + |out|); +inf for nonfinite, shape, crash and timeout."""
    max_abs: float
    """max |ref - out|, for protocols with an absolute-only tolerance; +inf as above."""
    extra: dict[tuple[str, float], float] = field(default_factory=dict)
    """(scale, ratio) -> max |ref - out| / (1 + ratio * |scale side|), for each one asked for."""

    def passes(self, tolerance: float) -> bool:
        """Whether allclose(atol=rtol=tolerance) accepts this output."""
        return self.margin <= tolerance

    def judged(self, tolerance: float) -> "Comparison":
        """This comparison with `pass` turned into `value` when the margin exceeds `tolerance`."""
        if self.outcome is Outcome.PASS and not self.passes(tolerance):
            return Comparison(Outcome.VALUE, self.margin, self.max_abs, self.extra)
        return self


def failed(outcome: Outcome, extra: Sequence[tuple[str, float]] = ()) -> Comparison:
    """A comparison for an output that never arrived (crash, timeout) or cannot be compared."""
    return Comparison(outcome, math.inf, math.inf, {k: math.inf for k in extra})


def compare(ref: Any, out: Any, extra: Sequence[tuple[str, float]] = ()) -> Comparison:
    """Compare a reference output with a candidate's, as KernelBench's check would; `extra` asks
    for more margins by (scale, ratio), scale `output` or `reference` (see `kbm_toolkit.judging`)."""
    import torch

    if not isinstance(out, torch.Tensor) or not isinstance(ref, torch.Tensor) or ref.shape != out.shape:
        return failed(Outcome.SHAPE, extra)
    with torch.no_grad():
        ref_f, out_f = _as_float(ref), _as_float(out)
        # one synchronisation for the common case, both finite (a worker compares once per cell)
        if not bool(torch.isfinite(ref_f).all() & torch.isfinite(out_f).all()):
            if bool(torch.isnan(ref_f).any()) or bool(torch.isnan(out_f).any()):
                return failed(Outcome.NONFINITE, extra)
            inf_ref, inf_out = torch.isinf(ref_f), torch.isinf(out_f)
            if not bool(torch.equal(inf_ref, inf_out)) or not bool(torch.equal(ref_f[inf_ref], out_f[inf_out])):
                return failed(Outcome.NONFINITE, extra)
            finite = ~inf_ref
            ref_f, out_f = ref_f[finite], out_f[finite]
        if ref_f.numel() == 0:
            return Comparison(Outcome.PASS, 0.0, 0.0, {k: 0.0 for k in extra})
        diff = (ref_f - out_f).abs_()
        largest = diff.max()  # queued before diff is scaled in place
        # the extra margins first: the default one below scales diff in place
        more = [(diff / (out_f if scale == "output" else ref_f).abs().mul_(ratio).add_(1.0)).max()
                for scale, ratio in extra]
        values = torch.stack((largest, *more, diff.div_(out_f.abs().add_(1.0)).max())).tolist()
    return Comparison(Outcome.PASS, values[-1], values[0], dict(zip(extra, values[1:-1])))


def _as_float(t: Any) -> Any:
    import torch

    # allclose compares floats in their own dtype; integers and bools are compared exactly, and
    # float64 keeps int64 indices exact far beyond any tensor size.
    return t if t.is_floating_point() else t.to(torch.float64)
