"""A problem's model and inputs as torch tensors, seeded exactly as KernelBench seeds them.

Weights are built once under seed 42 on the CPU (bit-identical to KernelBench's); each trial
reseeds and calls `get_inputs()`. The only module of `problems` that imports torch: scoring and
reports work from the specs alone.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.problems.hidden_tests import HiddenConfig, HiddenFile, require_hidden
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem, ProblemModule
from kbm_toolkit.problems.seeds import WEIGHT_SEED


def set_seed(seed: int) -> None:
    """Seed torch's CPU and CUDA generators, as KernelBench's `set_seed` does."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def init_inputs(module: ProblemModule) -> list[Any]:
    """`get_init_inputs()` under seed 42, as KernelBench calls it."""
    set_seed(WEIGHT_SEED)
    return list(module.call("get_init_inputs"))


def build_model(module: ProblemModule, device: str = "cpu") -> Any:
    """The reference model: weights drawn once on the CPU under seed 42, then moved."""
    init = init_inputs(module)
    with torch.no_grad():
        set_seed(WEIGHT_SEED)
        try:
            model = module.Model(*init)
        except Exception as e:
            raise ProblemError(f"Model(*get_init_inputs()) raised {type(e).__name__}: {e}",
                               module.problem.path) from e
    return model.to(device)


def draw_inputs(module: ProblemModule, seed: int, device: str = "cpu") -> list[Any]:
    """`get_inputs()` under `seed`, built directly on `device`; integer dtypes are kept."""
    set_seed(seed)
    with torch.device(device):
        values = module.call("get_inputs")
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def spec_model(spec: InputSpec, module: ProblemModule, device: str = "cpu") -> Any:
    """The reference model for `spec` (`module` loaded with the spec's shape overrides)."""
    model = build_model(module, device)
    if spec.reinit == "normal":
        g = torch.Generator(device="cpu").manual_seed(spec.seed ^ 0x9A2A)
        with torch.no_grad():
            for p in model.parameters():
                if p.is_floating_point():
                    p.copy_(torch.randn(p.shape, generator=g).to(p.device, p.dtype))
    return model


def spec_inputs(spec: InputSpec, module: ProblemModule, device: str = "cpu") -> list[Any]:
    """The input tensors of `spec`; `module` must be loaded with the spec's shape overrides."""
    if spec.base == "kbv-hidden":
        hidden = dict(spec.hidden)
        values = hidden_inputs(module.problem, hidden["sha256"], hidden["config"], spec.seed, device)
    else:
        values = draw_inputs(module, spec.seed, device)
    if spec.base not in ("official", "kbv-hidden"):
        set_seed(spec.seed ^ 0x5EED)
        values = [_redraw(spec, v) for v in values]
    for op, params in spec.transforms:
        p = dict(params)
        target = p.get("input")
        values = [_apply(op, p, v) if _is_float_tensor(v) and target in (None, i) else v
                  for i, v in enumerate(values)]
    return [v.contiguous() if isinstance(v, torch.Tensor) else v for v in values]


def hidden_inputs(problem: Problem, sha256: str, index: int, seed: int, device: str = "cpu") -> list[Any]:
    """Config `index` of KernelBench-Verified's `get_hidden_inputs()` for `problem`, called under
    `seed` with tensors made on `device`: the same tensors as element `index` of a plain full call.

    The other configs are still drawn, so the RNG advances as in the plain call, but their tensors
    are swapped for meta-device shadows as they are made: one config of a 6 GB problem stays alive,
    not four. Floating tensors are cast to fp32, as KBV's eval casts every input to its precision
    (its copy of level1/97 draws fp16); integer dtypes are kept, as for kbm's official draws.
    """
    tests, config = require_hidden(problem, sha256, index)
    values = None
    if config.calls is not None:
        try:
            values = _hidden_call(tests, config, seed, device, shadow=True)
        except Exception:  # a file the shadows do not suit: the plain call decides
            values = None
        if values is not None and any(isinstance(v, torch.Tensor) and v.is_meta for v in values):
            values = None  # the config drew on a shadow: only the plain call can build it
    if values is None:
        values = _hidden_call(tests, config, seed, device, shadow=False)
    return [(v.float() if v.is_floating_point() else v).to(device) if isinstance(v, torch.Tensor) else v
            for v in values]


def _hidden_call(tests: HiddenFile, config: HiddenConfig, seed: int, device: str, shadow: bool) -> list[Any]:
    """Run the hidden file as KBV's eval does (exec with torch and __file__) and take one config."""
    namespace: dict[str, Any] = {"torch": torch, "__file__": str(tests.path), "__builtins__": __builtins__,
                                 "__name__": f"kbm_hidden_{tests.path.parent.name}_{tests.path.stem}"}
    try:
        exec(compile(tests.source, str(tests.path), "exec"), namespace)
        if shadow and callable(namespace.get("_get_inputs")):
            namespace["_get_inputs"] = _shadowing(namespace["_get_inputs"], set(config.calls or ()))
        set_seed(seed)
        with torch.device(device):
            configs = namespace["get_hidden_inputs"]()
    except Exception as e:  # the file is user input: report any failure as a problem error
        if shadow:
            raise
        raise ProblemError(f"get_hidden_inputs() raised {type(e).__name__}: {e}", tests.path) from e
    if not isinstance(configs, (list, tuple)) or len(configs) != len(tests.configs):
        count = len(configs) if isinstance(configs, (list, tuple)) else type(configs).__name__
        raise ProblemError(f"get_hidden_inputs() returned {count} configs; its source appends "
                           f"{len(tests.configs)}", tests.path)
    values = configs[config.index]
    if not isinstance(values, (list, tuple)):
        raise ProblemError(f"config {config.index} is a {type(values).__name__}, not a list of inputs", tests.path)
    return list(values)


def _shadowing(draw: Any, keep: set[int]) -> Any:
    """`draw` (the hidden file's `_get_inputs`) that still draws on every call, but hands back
    meta-device shadows, same shapes and dtypes, except on the calls in `keep`."""
    count = [0]

    def wrapped() -> Any:
        call, count[0] = count[0], count[0] + 1
        values = draw()
        if call in keep or not isinstance(values, (list, tuple)):
            return values
        return type(values)(torch.empty_like(v, device="meta") if isinstance(v, torch.Tensor) else v
                            for v in values)
    return wrapped


def _redraw(spec: InputSpec, value: Any) -> Any:
    if not _is_float_tensor(value):
        return value
    a, b = spec.params
    out = torch.empty_like(value)
    if spec.base == "normal":
        return out.normal_(a, b)
    if spec.base == "uniform":
        return out.uniform_(a, b)
    # loguniform: |x| = 10**U(log10 a, log10 b), sign +/- with equal odds
    magnitude = torch.pow(10.0, out.uniform_(math.log10(a), math.log10(b)))
    sign = torch.empty_like(value).bernoulli_(0.5).mul_(2).sub_(1)
    return magnitude.mul_(sign)


def _apply(op: str, p: dict[str, Any], v: Any) -> Any:
    if op == "scale":
        return v * p["by"]
    v = v.clone()
    if op == "spike":
        v.select(int(p.get("dim", -1)), int(p.get("index", -1))).fill_(float(p["value"]))
    elif op == "spike_element":
        v.view(-1)[int(p.get("index", -1))] = float(p["value"])
    elif op == "nan_element":
        v.view(-1)[int(p.get("index", -1))] = float("nan")
    elif op == "quantize":
        levels = float(p.get("levels", 4))
        v = torch.round(v * levels) / levels
    elif op == "near_constant":
        v = 1.0 + float(p.get("eps", 1e-4)) * v
    return v


def _is_float_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()
