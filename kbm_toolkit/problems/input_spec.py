"""Input specs: small serialisable records saying how to build one input for one problem.

The common language of adapters, the gate and the evaluator. The same spec builds the same
tensors (`problems.tensors`), bit for bit, on the same device and software. A spec holds no tolerance: the protocol
that uses it does, so protocols sharing an input share its cells.

Record form (JSON/TOML):

    {"problem": "level1/23_Softmax", "seed": 1234,
     "base": "official" | "normal" | "uniform" | "loguniform", "params": [a, b],
     "transforms": [{"op": "scale", "by": -1.0}, {"op": "spike", "dim": -1, "index": -1, "value": 1e3}],
     "shape": {"dim": 1001}, "reinit": "default" | "normal"}

A KernelBench-Verified hidden test adds one key, only to its own records, so every other spec's
id stays what it was: `"base": "kbv-hidden", "hidden": {"config": 1, "sha256": "…"}` is config 1
(0-based) of `get_hidden_inputs()` in KBV's hidden file for the problem, called under `seed`;
`sha256` is that file's content hash with its problem copy's (`problems.hidden_tests`), so an
edited file is a new input. The record names no path: the checkout is found through `KBM_KBV`.

A spec may also name a condition the launches on it run under, again only in its own records:
`"stress": "memory"` builds the same tensors as the spec without it, and every launch on it, a
mutant's or a submission's, runs beside memory stress (`cuda.stress`: another schedule, for races
no input reaches). It is another input, with its own id and cells; the correct kernel's validity
check on it runs unstressed, as on the spec without it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import OFFICIAL_TRIALS, trial_seeds

BASES = {"official": 0, "normal": 2, "uniform": 2, "loguniform": 2, "kbv-hidden": 0}
"""Base draws and how many parameters each takes: normal (mean, std), uniform (low, high),
loguniform (smallest, largest magnitude; random signs); kbv-hidden: a config of KernelBench-Verified's
published hidden tests (`hidden` says which)."""

HIDDEN_KEYS = ("config", "sha256")
"""What a kbv-hidden spec's `hidden` holds: the config's index in `get_hidden_inputs()`, the file's hash."""

TRANSFORMS: dict[str, set[str]] = {
    "scale": {"by", "input"},
    "spike": {"dim", "index", "value", "input"},
    "spike_element": {"index", "value", "input"},
    "quantize": {"levels", "input"},
    "near_constant": {"eps", "input"},
    "nan_element": {"index", "input"},
}
"""Transform ops and their parameters; each applies to every float tensor, or only to input
number `input`. scale: multiply by `by`. spike: set the slice `index` along `dim` to `value`.
spike_element: set flat element `index`. quantize: round to `levels` steps per unit (ties).
near_constant: x -> 1 + eps * x (variance far below any epsilon). nan_element: a NaN at `index`."""

REINITS = ("default", "normal")

STRESSES = ("memory",)
"""What a spec's `stress` may name: `memory`, scattered read-modify-writes beside the launch."""


def _freeze(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


def _hashable(value: Any) -> Any:
    """`value` with every list a tuple, so that it can key a cache."""
    return tuple(_hashable(v) for v in value) if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True)
class InputSpec:
    """How to build one input: a base draw, then transforms, under module-constant overrides."""

    problem: str
    seed: int
    base: str = "official"
    params: tuple[float, ...] = ()
    transforms: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    shape: tuple[tuple[str, Any], ...] = ()
    reinit: str = "default"
    """`normal`: every float parameter of the model is redrawn N(0, 1) under the spec's seed."""
    label: str = field(default="", compare=False)
    """Words for people; not part of the identity."""
    hidden: tuple[tuple[str, Any], ...] = ()
    """kbv-hidden only: (("config", k), ("sha256", hash)); in the record only when present."""
    stress: str = ""
    """A stress every launch on this input runs beside (`STRESSES`), or none; in the record only when set."""

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise KbmError(f"input spec base must be one of {', '.join(BASES)}, got {self.base!r}")
        if self.base != "official" and len(self.params) != BASES[self.base]:
            raise KbmError(f"base {self.base!r} takes {BASES[self.base]} parameters, got {list(self.params)}")
        for op, params in self.transforms:
            if op not in TRANSFORMS:
                raise KbmError(f"unknown input transform {op!r} (known: {', '.join(TRANSFORMS)})")
            extra = {k for k, _ in params} - TRANSFORMS[op]
            if extra:
                raise KbmError(f"transform {op!r} has no parameter {sorted(extra)[0]!r}")
        if self.reinit not in REINITS:
            raise KbmError(f"reinit must be one of {', '.join(REINITS)}, got {self.reinit!r}")
        if self.stress and self.stress not in STRESSES:
            raise KbmError(f"stress must be one of {', '.join(STRESSES)}, got {self.stress!r}")
        if (self.base == "kbv-hidden") != bool(self.hidden):
            raise KbmError("base 'kbv-hidden' needs a hidden = {config, sha256} and no other base takes one")
        if self.hidden:
            hidden = dict(self.hidden)
            config = hidden.get("config")
            if set(hidden) != set(HIDDEN_KEYS) or isinstance(config, bool) or not isinstance(config, int) \
                    or config < 0 or not isinstance(hidden["sha256"], str):
                raise KbmError(f"hidden must be {{config: a non-negative integer, sha256: a string}}, got {hidden!r}")
            if self.shape:  # the hidden file draws from KBV's own copy of the problem, at its sizes
                raise KbmError("a kbv-hidden spec takes no shape overrides")

    @classmethod
    def make(cls, problem: str, seed: int, base: str = "official", params: tuple[float, ...] = (),
             transforms: list[dict[str, Any]] | None = None, shape: dict[str, Any] | None = None,
             reinit: str = "default", label: str = "", hidden: dict[str, Any] | None = None,
             stress: str = "") -> "InputSpec":
        """Build a spec from plain dicts: `transforms=[{"op": "scale", "by": -1}]`."""
        frozen = tuple((t["op"], _freeze({k: v for k, v in t.items() if k != "op"})) for t in transforms or [])
        return cls(problem, int(seed), base, tuple(float(p) for p in params), frozen,
                   _freeze(shape or {}), reinit, label, _freeze(dict(hidden or {})), stress or "")

    def record(self) -> dict[str, Any]:
        """The spec as plain JSON-able data (without the label)."""
        return {"problem": self.problem, "seed": self.seed, "base": self.base, "params": list(self.params),
                "transforms": [{"op": op, **dict(p)} for op, p in self.transforms],
                "shape": dict(self.shape), "reinit": self.reinit,
                **({"hidden": dict(self.hidden)} if self.hidden else {}),  # absent elsewhere: ids unchanged
                **({"stress": self.stress} if self.stress else {})}

    @functools.cached_property
    def id(self) -> str:
        """Stable id: sha256 of the canonical JSON record, 16 hex digits (computed once: scoring asks often)."""
        text = json.dumps(self.record(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_record(cls, data: dict[str, Any], label: str = "") -> "InputSpec":
        """Inverse of `record()`; a malformed record raises KbmError saying which key."""
        try:
            return cls.make(data["problem"], data["seed"], data.get("base", "official"),
                            tuple(data.get("params", ())), list(data.get("transforms", [])),
                            dict(data.get("shape", {})), data.get("reinit", "default"), label,
                            data.get("hidden"), data.get("stress", ""))
        except (KeyError, TypeError, ValueError) as e:
            raise KbmError(f"malformed input spec {data!r}: {type(e).__name__}: {e}") from None

    @property
    def overrides_key(self) -> tuple:
        """The module-constant overrides, hashable (a list-valued one, `input_shape = [37, 5]`, as a tuple)."""
        return tuple((name, _hashable(value)) for name, value in self.shape)

    def model_key(self, problem: Problem) -> tuple:
        """What `problem`'s reference model for this spec depends on: the overrides of the constants
        the model can read (`Problem.model_constants`; every override where that cannot be told),
        the parameter init, and the seed a redraw of the parameters uses."""
        reads = problem.model_constants()
        return (tuple((name, value) for name, value in self.overrides_key if reads is None or name in reads),
                self.reinit, self.seed if self.reinit != "default" else None)

    @property
    def shape_key(self) -> str:
        """What decides the shapes this spec builds, as canonical JSON: its module-constant
        overrides, or its KBV hidden config (with the seed its file is called under)."""
        decides = ({"hidden": dict(self.hidden), "seed": self.seed} if self.base == "kbv-hidden"
                   else {"shape": dict(self.shape)})
        return json.dumps(decides, sort_keys=True, separators=(",", ":"))


def official_specs(problem: Problem, trials: int = OFFICIAL_TRIALS) -> list[InputSpec]:
    """KernelBench's official inputs: `get_inputs()` under each of its trial seeds."""
    return [InputSpec.make(problem.key, s, label=f"official trial {i}") for i, s in enumerate(trial_seeds(trials))]
