"""What several test modules build their cases from: paths, small stores, screening rules.

Test modules import from here, never from each other (a test module is not a library).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from kbm_toolkit.mutation.campaign import mutate_problems
from kbm_toolkit.mutation.rules import _parse
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.store import Store

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
KERNELBENCH = Path(os.environ.get("KBM_KERNELBENCH", REPO / "third_party" / "KernelBench"))
KBV_CHECKOUT = Path(os.environ.get("KBM_KBV") or REPO / "third_party" / "kernel_bench_verified")
"""A KernelBench-Verified checkout for the tests that need its hidden tests (they skip without one);
read before conftest clears `KBM_KBV`, which every test starts without."""
KB, KBV = load_protocol("kernelbench"), load_protocol("kbv")


def load_script(relative: str) -> ModuleType:
    """A repository script (`scripts/...`, `bench/...`) imported as a module, for its functions."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rule(name: str, pattern: str, replacement: str, **extra):
    return _parse({"name": name, "family": extra.pop("family", "arithmetic"), "description": name,
                   "pattern": pattern, "replacement": replacement, **extra}, Path("test.toml"), 0)


SCREENING_RULES = [
    rule("breaks-compile", r"\bout\[i\]", "outt[i]"),                    # undefined name
    rule("commutes", r"v > 0\.0f", "0.0f < v"),                           # same machine code
    rule("slope-div", r"v \* negative_slope", "v / negative_slope"),      # a real change
    rule("slope-div-again", r"(\?\s*v\s*:\s*)v \* (negative_slope)", r"\1v / \2"),  # the same change
]


def seed(store: Store, problem) -> dict[str, str]:
    """Mutants A..D on one problem, the official and hidden inputs, their checks and cells.

    A: killed by an official input at margin 0.5   -> both protocols detect it
    B: margin 5e-3 on the official inputs          -> only the 1e-3 tolerance sees it
    C: killed only by the hidden x-1 input         -> only KBV's inputs reach it
    D: never killed                                 -> unwitnessed, outside every denominator
    hidden x3: the correct kernel's margin is 2e-3 -> a KBV false rejection
    hidden x0.01: the reference is non-finite      -> dropped by KBV
    """
    store.record_problem(problem)
    for mid, family in (("A", "arithmetic"), ("B", "precision"), ("C", "semantic"), ("D", "boundary")):
        store.db["mutants"].insert({"id": mid, "problem": problem.key, "substrate_hash": "h", "rule": f"r{mid}",
                                    "family": family, "status": "distinct", "name": mid})
    specs = {s.label: s for s in KBV.specs(problem)}
    store.record_inputs(list(specs.values()), "kbv")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for label, spec in specs.items():
        check = {"input": spec.id, "valid": True, "outcome": "pass", "margin": 1e-6, "max_abs": 1e-6}
        if label == "hidden x3":
            check.update(valid=True, margin=2e-3)
        if label == "hidden x0.01":
            check = {"input": spec.id, "valid": False, "note": "reference is non-finite on this input"}
        store.record_input_check("h", run, check)
    cells = []
    for label, spec in specs.items():
        official = label.startswith("official")
        margins = {"A": 0.5 if official else 1e-6, "B": 5e-3 if official else 1e-6,
                   "C": 0.5 if label == "hidden x-1" else 1e-6, "D": 1e-6}
        cells += [{"mutant": m, "input": spec.id, "outcome": "pass", "margin": v} for m, v in margins.items()]
    store.record_cells(run, cells)
    return {label: spec.id for label, spec in specs.items()}


def build(path: Path, demo: ProblemSet) -> tuple[Store, dict[str, str]]:
    """demo/1's screening mutants: slope-div killed by an official input, one distinct mutant left
    unevaluated, plus the compile error, the equivalent and the duplicate."""
    problem = demo.get("demo/1")
    store = Store(path)
    mutate_problems(store, [problem], "sm_90", workers=1, require_gate=False, rules=SCREENING_RULES)
    rows = list(store.mutants(problem.key))
    ids = {r["rule"]: r["id"] for r in rows}
    specs = KB.specs(problem)
    store.record_inputs(specs, "kernelbench")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for s in specs:
        store.record_input_check(rows[0]["substrate_hash"], run,
                                 {"input": s.id, "valid": True, "outcome": "pass", "margin": 1e-6, "max_abs": 1e-6})
    store.record_cells(run, [{"mutant": ids["slope-div"], "input": s.id, "outcome": "pass",
                              "margin": 0.5 if i == 0 else 1e-7} for i, s in enumerate(specs)])
    return store, ids


# A benchmark pack as README.md's "Your own benchmark (packs)" writes it (problem 1, its substrate,
# the protocol and the rule are the README's text, checked by tests/test_packs.py), plus a second problem.
PACK_README_FILES = {
    "bench.toml": '''[bench]
name = "mybench"
description = "My benchmark's elementwise kernels"
''',
    "problems/level1/1_MyRelu.py": '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "substrates/level1/1_MyRelu/kernel.cu": '''extern "C" __global__ void my_relu(const float* __restrict__ x, float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}
''',
    "substrates/level1/1_MyRelu/launch.py": '''BLOCK = 256


def launch(k, model, x):
    out = k.empty_like(x)
    n = x.numel()
    k.my_relu(x, out, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
''',
    "adapters/mybench/protocol.toml": '''[protocol]
name = "mybench"
description = "mybench's harness: 5 official trials and a wide draw, atol = 1e-5, rtol = 1e-3"
atol = 1e-5
rtol = 1e-3
exclude = ["mybench/level1/2"]      # keys, or <level>/<id>: the pack's levels carry its name

[[inputs]]
trials = 5
label = "official trial {index}"

[[inputs]]
seed = 7
base = "normal"
params = [0.0, 3.0]
label = "wide normal"
''',
    "rules/mybench.toml": r'''[[rule]]
name = "relu-floor-one"
family = "semantic"
description = "the clamped branch of a ReLU yields 1 instead of 0"
pattern = '\?\s*v\s*:\s*0\.0f'
replacement = '? v : 1.0f'
''',
}

PACK_SECOND_PROBLEM = {
    "problems/level1/2_Scale.py": '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float = 1.5):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.alpha


size = 1000


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
''',
    "substrates/level1/2_Scale/kernel.cu": '''extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ out, long long n, float alpha) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * alpha;
}
''',
    "substrates/level1/2_Scale/launch.py": '''BLOCK = 128


def launch(k, model, x):
    out = k.empty_like(x)
    n = x.numel()
    k.scale(x, out, n, model.alpha, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
''',
}


def write_pack(root: Path, name: str = "mybench", replace: dict[str, str | None] | None = None) -> Path:
    """The README's pack and a second problem, in `root` (made), under `name`; `replace` maps a
    file's path (as for mybench) to new text, or to None to leave the file out."""
    files = {**PACK_README_FILES, **PACK_SECOND_PROBLEM}
    for path, text in {**files, **(replace or {})}.items():
        if text is None:
            continue
        if name != "mybench":
            text = text.replace("mybench", name)
        target = root / path.replace("mybench", name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


class FakeEntryPoint:
    """An installed plug-in's entry point, for monkeypatching `importlib.metadata.entry_points`."""

    def __init__(self, name: str, target: object, group: str) -> None:
        self.name, self.value, self.group, self._target = name, f"fake_plugin:{name}", group, target

    def load(self) -> object:
        return self._target


def hidden_source(configs: list[tuple[str, str, str]], extra: str = "", copy: str = "1_Tiny.py") -> str:
    """A hidden test file in the form KBV's generator writes (kbm's own wording)."""
    body = "".join(f"    # {dist}: {words}\n    configs.append({call})\n" for dist, words, call in configs)
    return f'''"""Hidden inputs for a test problem."""
import importlib.util
import os

import torch

_PROB_PATH = os.path.abspath(os.path.join(os.path.dirname(__file__), '../../KernelBench/level1/{copy}'))


def _get_inputs():
    spec = importlib.util.spec_from_file_location('_p', _PROB_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_inputs()


def _scale(inputs, factor):
    return [t * factor if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]


def get_hidden_inputs():
    """The hidden configs."""
    configs = []
{body}{extra}    return configs
'''


def problem_from_source(folder: Path, name: str, source: str):
    """A one-off problem `mine/1_<name>`: `source` (a Model, get_inputs, get_init_inputs) written to
    `folder/1_<name>.py`."""
    from kbm_toolkit.problems.problem import Problem

    path = folder / f"1_{name}.py"
    path.write_text(source)
    return Problem(f"mine/1_{name}", "mine", 1, name, path, "mine")
