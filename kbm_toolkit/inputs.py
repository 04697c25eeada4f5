"""Input specs: small serialisable records saying how to build one input for one problem.

The common language of adapters, the gate and the evaluator. The same spec builds the same
tensors, bit for bit, on the same device and software.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems import ProblemModule, set_seed

BASES = ("official", "normal", "uniform")


@dataclass(frozen=True)
class InputSpec:
    """How to build one input: a base draw, then transforms, under module-constant overrides."""

    problem: str
    seed: int
    base: str = "official"
    """`official`: the problem's `get_inputs()`; `normal`/`uniform`: every float tensor redrawn."""
    params: tuple[float, ...] = ()
    """Distribution parameters: (mean, std) for normal, (low, high) for uniform."""
    transforms: tuple[tuple[str, float], ...] = ()
    """Applied in order to every float tensor: ("scale", s) multiplies by s."""
    shape: tuple[tuple[str, Any], ...] = ()
    """Module-constant overrides, e.g. (("dim", 1001),)."""
    label: str = field(default="", compare=False)
    """Words for people; not part of the identity."""

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise KbmError(f"input spec base must be one of {', '.join(BASES)}, got {self.base!r}")
        for op, _ in self.transforms:
            if op != "scale":
                raise KbmError(f"unknown input transform {op!r}")

    def record(self) -> dict[str, Any]:
        """The spec as plain JSON-able data (without the label)."""
        return {"problem": self.problem, "seed": self.seed, "base": self.base,
                "params": list(self.params), "transforms": [list(t) for t in self.transforms],
                "shape": dict(self.shape)}

    @property
    def id(self) -> str:
        """Stable id: sha256 of the canonical JSON record, 16 hex digits."""
        text = json.dumps(self.record(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_record(cls, data: dict[str, Any], label: str = "") -> "InputSpec":
        """Inverse of `record()`."""
        return cls(problem=data["problem"], seed=int(data["seed"]), base=data.get("base", "official"),
                   params=tuple(data.get("params", ())),
                   transforms=tuple((op, float(v)) for op, v in data.get("transforms", ())),
                   shape=tuple(sorted(data.get("shape", {}).items())), label=label)

    def build(self, module: ProblemModule, device: str = "cpu") -> list[Any]:
        """The input tensors; `module` must be loaded with this spec's shape overrides."""
        import torch

        values = module.inputs(self.seed, device)
        if self.base != "official":
            set_seed(self.seed ^ 0x5EED)
            values = [self._redraw(v) for v in values]
        for op, by in self.transforms:
            values = [v * by if _is_float_tensor(v) else v for v in values]
        return [v.contiguous() if isinstance(v, torch.Tensor) else v for v in values]

    def _redraw(self, value: Any) -> Any:
        import torch

        if not _is_float_tensor(value):
            return value
        a, b = self.params or ((0.0, 1.0) if self.base == "normal" else (0.0, 1.0))
        out = torch.empty_like(value)
        return out.normal_(a, b) if self.base == "normal" else out.uniform_(a, b)


def _is_float_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.is_floating_point()
