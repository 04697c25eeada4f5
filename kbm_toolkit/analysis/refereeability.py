"""Can a protocol referee a problem at all? The reference's own precision, the vacuity band, and
an output that ignores its input.

Three things make a problem useless to a checker whatever the kernel does: a reference that
misses its own fp64 evaluation by more than the tolerance (two correct fp32 kernels then
disagree), an output so small that an all-zeros kernel passes (max |ref| <= t: allclose(0, ref)
holds), and an output that is the same, bit for bit, on every input (a kernel that ignores its
input passes). The first and the last are measured by `kbm refcheck`
(`evaluation.reference_check`); the second needs only the reference magnitudes every evaluation
stores. The audit leaves flagged problems out.
"""

from __future__ import annotations

from typing import Any, Iterable

from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.protocols.protocol import Protocol


def wrong_positions(check: dict[str, Any], tolerance: float) -> tuple[int, int] | None:
    """(positions the fp32 reference gets wrong against fp64 at `tolerance`, positions) from a
    stored reference check, where it counted them at that tolerance; None where it did not."""
    return _counted(check, "violations", tolerance)


def moved_positions(check: dict[str, Any], tolerance: float) -> tuple[int, int] | None:
    """(positions where the fp32 reference moves past `tolerance` when its floating inputs move one
    ulp, positions) from a stored reference check, where it counted them; None where it did not."""
    return _counted(check, "nudge_violations", tolerance)


def _counted(check: dict[str, Any], counts: str, tolerance: float) -> tuple[int, int] | None:
    """(the count at `tolerance` in the check's `counts` field, positions), or None."""
    counted = check.get(counts) or {}
    if f"{tolerance:g}" not in counted or check.get("positions") is None:
        return None
    return int(counted[f"{tolerance:g}"]), int(check["positions"])


def flags(protocol: Protocol, problems: Iterable[Problem], checks: dict[str, dict[str, Any]],
          tolerance: float | None = None, input_checks: dict[str, dict[str, dict[str, Any]]] | None = None
          ) -> dict[str, str]:
    """Problems `protocol` cannot referee at `tolerance` (default its own), with the reason.

    `checks` are stored reference checks by input id; `input_checks` (problem -> input id ->
    check) the evaluations' input checks, which also record max |ref|. A problem is flagged when
    the protocol excludes it, when its reference misses fp64 by more than the tolerance on one
    of the protocol's inputs, or when every input whose reference magnitude is known has max
    |ref| <= tolerance (an all-zeros output passes).
    """
    t = protocol.tolerance if tolerance is None else tolerance
    out: dict[str, str] = {}
    for problem in problems:
        stored = (input_checks or {}).get(problem.key, {})
        if not protocol.applies_to(problem):  # its inputs list is empty: every witness would count as missed
            out[problem.key] = "the protocol excludes it (`exclude` in its protocol file)"
            continue
        try:
            specs = protocol.specs(problem)
        except Exception:  # a problem the protocol cannot describe is reported elsewhere
            continue
        worst = max(((checks[s.id].get("fp64_margin") or 0.0, s.label, checks[s.id]) for s in specs if s.id in checks),
                    default=None, key=lambda w: w[:2])
        if worst is not None and worst[0] > t:
            wrong, moved = wrong_positions(worst[2], t), moved_positions(worst[2], t)
            out[problem.key] = (f"the reference misses its fp64 evaluation by {worst[0]:.1e} > {t:g} ({worst[1]}"
                                + (f"; {wrong[0]:,} of {wrong[1]:,} positions" if wrong else "")
                                + (f"; {moved[0]:,} move past {t:g} when its inputs move one ulp" if moved and moved[0]
                                   else "") + ")")
            continue
        sums = {checks[s.id]["output_checksum"] for s in specs if (checks.get(s.id) or {}).get("output_checksum")}
        checked = sum(1 for s in specs if (checks.get(s.id) or {}).get("output_checksum"))
        if checked > 1 and len(sums) == 1:
            out[problem.key] = (f"input-insensitive: the reference's output is the same, bit for bit, on all "
                                f"{checked} inputs checked; a kernel that ignores its input passes")
            continue
        magnitudes = [m for s in specs
                      for m in ((stored.get(s.id) or {}).get("ref_abs_max"), (checks.get(s.id) or {}).get("ref_abs_max"))
                      if m is not None]
        if magnitudes and max(magnitudes) <= t:
            out[problem.key] = f"vacuous: max |ref| {max(magnitudes):.1e} <= {t:g} on every input, an all-zeros output passes"
    return out
