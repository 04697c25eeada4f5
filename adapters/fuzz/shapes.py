"""Shape variation for the fuzz-shapes protocol: one size constant at a time to a boundary value."""

from __future__ import annotations

from typing import Any

NOT_SIZES = ("kernel", "stride", "pad", "dilation", "group", "axis", "eps", "momentum", "slope",
             "alpha", "beta", "scale", "factor", "margin", "value", "min", "max", "threshold")
"""Words in a constant's name that mark it as a parameter, not a size: changing it changes what
the problem computes. A name ending in `_dim` (reduce_dim) is an axis."""


def is_size(name: str, value: Any, axis_at_most: int | None = None) -> bool:
    """Whether a module constant is an integer size that shape variation may change; with
    `axis_at_most`, a constant named `dim` no larger than it is an axis, not a size."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 2 or name.endswith("_dim"):
        return False
    if name == "dim" and axis_at_most is not None and value <= axis_at_most:
        return False
    tokens = name.lower().split("_")
    return not any(t.startswith(w) for t in tokens for w in NOT_SIZES) and "p" not in tokens


def boundary_shapes(problem: Any, constants: dict[str, Any], config: dict[str, Any]) -> list[dict[str, Any]]:
    """Input-spec records: each integer size constant of `problem` set to each value, the
    smallest against the official size first; with `max_growth` in `config`, none that grows a
    constant past that many times its official value; with `dim_axis_at_most`, no `dim` that small.

    A run with `--first-kill` takes a problem's inputs in this order and stops a mutant at the
    first that detects it, so the inputs that shrink the problem run on most mutants and the ones
    that grow it (up to 64 GiB a tensor) only on what every smaller one let through."""
    cap, axis = config.get("max_growth"), config.get("dim_axis_at_most")
    varied = [(size / value, name, size) for name, value in constants.items() if is_size(name, value, axis)
              for size in config.get("values", [1, 3, 7, 256, 1025])
              if size != value and (cap is None or size <= cap * value)]
    return [{"shape": {name: size}, "label": f"shape {name}={size}"} for _, name, size in sorted(varied)]
