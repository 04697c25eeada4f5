"""A deterministic, taxonomy-driven targeted input generator (no language model).

For each fault family, inputs built to expose it: sign-mixed and negative values (activations'
negative branches, abs, clamps), same-sign large magnitudes (stabilizers, overflow), a spike in
the final row, the final reduction term, the first term and the last element (dropped tails and
skipped first iterations), duplicated maxima (tie-breaking), NaN (NaN policy), near-constant rows
(epsilons), odd shapes (remainder tiles, guards) and re-drawn parameters (identity affine).

Magnitudes stay under the problem's measured validity ceiling: the largest scale at which the
correct substrate still passes, measured separately for sign-mixed and same-sign inputs from
probe inputs in the store. Every generated input still meets the validity gate before it can
kill anything (the evaluator's input check).
"""

from __future__ import annotations

import re
from typing import Any

from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.protocols.protocol import protocol_toml
from kbm_toolkit.analysis.matrix import valid_at

CEILING_SCALES = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1e3, 1e4)
"""Scales probed for the validity ceiling, in increasing order."""

_PROBE = re.compile(r"^ceiling (sign-mixed|same-sign) x(.+)$")


def ceiling_probes(problem: Problem) -> list[InputSpec]:
    """The inputs whose validity locates the ceiling: normal(0, 1) and official draws, scaled."""
    seed = trial_seeds(1)[0]
    specs = []
    for s in CEILING_SCALES:
        specs.append(InputSpec.make(problem.key, seed, base="normal", params=(0.0, 1.0),
                                    transforms=[{"op": "scale", "by": s}], label=f"ceiling sign-mixed x{s:g}"))
        specs.append(InputSpec.make(problem.key, seed, transforms=[{"op": "scale", "by": s}],
                                    label=f"ceiling same-sign x{s:g}"))
    return specs


def ceiling_noise(matrices: list[Any]) -> dict[str, dict[float, list[float]]]:
    """Per kind of ceiling probe (sign-mixed, same-sign), per scale, the correct kernel's stored
    margins over every problem probed (the paper's Fig. 2b, right: legitimate noise against input
    scale, where it crosses a tolerance a harsher input starts rejecting correct kernels)."""
    noise: dict[str, dict[float, list[float]]] = {"sign-mixed": {}, "same-sign": {}}
    for mx in matrices:
        for spec in ceiling_probes(mx.problem):
            check = mx.checks.get(spec.id)
            m = _PROBE.match(spec.label)
            if m and check is not None and check.get("margin") is not None:
                noise[m.group(1)].setdefault(float(m.group(2)), []).append(check["margin"])
    return noise


def ceiling(checks: dict[str, dict[str, Any]], probes: list[InputSpec], tolerance: float) -> dict[str, float | None]:
    """Per kind, the largest probed scale with every scale up to it valid at `tolerance`.

    None: not measured yet (a probe lacks its check) or invalid already at scale 1.
    """
    out: dict[str, float | None] = {}
    for kind in ("sign-mixed", "same-sign"):
        best: float | None = None
        for spec in probes:
            m = _PROBE.match(spec.label)
            if not m or m.group(1) != kind:
                continue
            check = checks.get(spec.id)
            if check is None:
                best = None
                break
            if not valid_at(check, tolerance):
                break
            best = float(m.group(2))
        out[kind] = best
    return out


def targeted_specs(problem: Problem, limits: dict[str, float | None], gate_shapes: list[dict[str, Any]],
                   seeds: int = 1) -> list[InputSpec]:
    """Targeted inputs for `problem`, one family probe after another, under `limits`; the odd
    shapes first."""
    mixed = limits.get("sign-mixed") or 1.0
    same = limits.get("same-sign") or 1.0
    spike = max(10.0, same)  # a spike must dominate the many small terms it hides among
    specs: list[InputSpec] = []
    for k, seed in enumerate(trial_seeds(5 + seeds)[5:]):
        def add(label: str, **kw: Any) -> None:
            specs.append(InputSpec.make(problem.key, seed, label=f"target {label}" + (f" #{k}" if k else ""), **kw))

        # the odd shapes first: they are the gate's small shapes, and under --first-kill a mutant
        # one of them detects (116 of the 334 the targeted inputs killed on the first 20%) is not
        # launched on the official-size ones after (156 of 1,078 launch seconds there)
        for shape in gate_shapes:
            words = ", ".join(f"{a}={b}" for a, b in shape.items())
            add(f"odd shape {words}", shape=shape)
            add(f"odd shape {words}, sign-mixed", base="normal", params=(0.0, 1.0), shape=shape)
        add(f"sign-mixed normal x{mixed:g}", base="normal", params=(0.0, mixed))
        add("negative (official x -1)", transforms=[{"op": "scale", "by": -1.0}])
        add("sign-mixed uniform(-1, 1)", base="uniform", params=(-1.0, 1.0))
        add(f"same-sign large x{same:g}", transforms=[{"op": "scale", "by": same}])
        add(f"spike final row {spike:g}", transforms=[{"op": "spike", "dim": -2, "index": -1, "value": spike}])
        add(f"spike final term {spike:g}", transforms=[{"op": "spike", "dim": -1, "index": -1, "value": spike}])
        add(f"spike first term {spike:g}", transforms=[{"op": "spike", "dim": -1, "index": 0, "value": spike}])
        add(f"spike last element {spike:g}", transforms=[{"op": "spike_element", "index": -1, "value": spike}])
        add("negative spike final term", base="uniform", params=(-1.0, -0.5),
            transforms=[{"op": "spike", "dim": -1, "index": -1, "value": -spike}])
        add("ties (quantized to halves)", transforms=[{"op": "quantize", "levels": 2}])
        add("NaN in the last element", transforms=[{"op": "nan_element", "index": -1}])
        add("near-constant rows", transforms=[{"op": "near_constant", "eps": 1e-4}])
        add("re-drawn parameters", reinit="normal")
        add("re-drawn parameters, sign-mixed", base="normal", params=(0.0, 1.0), reinit="normal")
    seen, unique = set(), []
    for s in specs:
        if s.id not in seen:
            seen.add(s.id)
            unique.append(s)
    return unique


def emit_targets(specs_by_problem: dict[str, list[InputSpec]], name: str, tolerance: float) -> str:
    """The targeted inputs as a protocol.toml (`kbm run --inputs DIR`, `kbm audit --adapter DIR`)."""
    return protocol_toml(name, "taxonomy-driven targeted inputs", tolerance, specs_by_problem,
                         drop_nonfinite_reference=True,
                         comment="Targeted inputs from `kbm targets` (taxonomy-driven, under each problem's ceiling).")
