"""The real checkers, imported from the user's checkouts, and one submission's verdict from each.

KernelBench's eval is `<checkout>/src/kernelbench/eval.py` (package `kernelbench`, with
`<checkout>/src` on sys.path); KernelBench-Verified's is `<checkout>/src/eval.py` (package `src`,
with the checkout on sys.path). Both packages import LLM clients and helpers at the top
(`dotenv`, `openai`, `litellm`, `together`, `google.genai`, `anthropic`, `transformers`, `tqdm`,
`requests`) that an evaluation never calls: where one is not installed, a stand-in module is put
in sys.modules, and only for those names. `pydantic` is needed (the result is a `BaseModel`); where
it is missing a minimal `BaseModel` (fields with their defaults) stands in, and the verdict says so.

Nothing here copies the checkers' code: their functions run as they are, in this process (a
worker's: the evals touch CUDA).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import math
import re
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from kbm_toolkit.errors import KbmError

STUBBABLE = ("dotenv", "tqdm", "openai", "litellm", "together", "google", "anthropic", "transformers",
             "requests", "pydantic")
"""Top-level modules the checkers import but an evaluation does not use (pydantic: see below)."""

KERNELBENCH, KBV = "kernelbench", "kbv"
"""The checkers, by the names results carry."""

_LOG_TAIL = 2000


class CheckerError(KbmError):
    """A checker's eval cannot be imported from the checkout given."""


@dataclass
class Verdict:
    """What a checker made of one submission."""

    checker: str
    compiled: bool
    correct: bool
    tolerance: float | None
    """The fp32 tolerance the eval judged at."""
    tolerance_source: str
    """`eval` (the eval's own `get_tolerance_for_precision`) or `patched` (set for this run)."""
    trials: str = ""
    """The eval's own count, e.g. `(5 / 5)`; hidden configs too for KBV."""
    max_difference: list[float] = field(default_factory=list)
    """Per failing official trial, as the eval reports it (to 6 decimals)."""
    hidden_max_difference: list[float] = field(default_factory=list)
    """Per failing hidden config (KBV)."""
    error: str = ""
    """The eval's error text (compilation, runtime, shape), or what it raised."""
    raised: bool = False
    """The eval itself raised (e.g. a CUDA error in its own clean-up): counted as not correct."""
    seconds: float = 0.0
    stubbed: list[str] = field(default_factory=list)
    """Modules stubbed in the worker because they are not installed (the checkers' optional imports)."""
    log: str = ""
    """The tail of what the eval printed, when the submission was not found correct."""


# -- importing a checker ---------------------------------------------------------------------------

class _Anything:
    """Stands for any name of a stubbed module: callable, and every attribute is itself."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> "_Anything":
        return self

    def __getattr__(self, name: str) -> "_Anything":
        return self


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything


class _BaseModel:
    """pydantic's BaseModel as the checkers' results use it: annotated fields with defaults."""

    def __init__(self, **values: Any) -> None:
        for cls in reversed(type(self).__mro__):
            for name in getattr(cls, "__annotations__", {}):
                if name in cls.__dict__:
                    setattr(self, name, copy.deepcopy(cls.__dict__[name]))
        for name, value in values.items():
            setattr(self, name, value)

    def model_dump(self) -> dict[str, Any]:
        return dict(vars(self))

    dict = model_dump


def _install_stub(name: str) -> None:
    if name.split(".")[0] == "pydantic":
        module = types.ModuleType(name)
        module.BaseModel = _BaseModel  # type: ignore[attr-defined]
    else:
        module = _StubModule(name)
        module.__path__ = []  # a package, so `import google.genai` finds the stub's children
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, module)


def _missing_name(error: ImportError) -> str:
    """The module `from PACKAGE import NAME` lacked: `PACKAGE.NAME` (a namespace package such as
    `google`, installed by protobuf, holds no `genai`), else ""."""
    found = re.match(r"cannot import name '([^']+)' from '([^']+)'", str(error))
    return f"{found.group(2)}.{found.group(1)}" if found else ""


_LOADED: dict[tuple[str, str], types.ModuleType] = {}
_STUBBED: list[str] = []
"""Every module stubbed in this process (the checkers share them: KBV's package imports dotenv too)."""


def _import(package_dir: Path, module: str, checker: str) -> tuple[types.ModuleType, list[str]]:
    """`module` with `package_dir` first on sys.path, stubbing the optional imports it lacks."""
    key = (checker, str(package_dir.resolve()))
    if key in _LOADED:
        return _LOADED[key], list(_STUBBED)
    top = module.split(".")[0]
    held = sys.modules.get(top)
    if held is not None and not str(getattr(held, "__file__", "") or "").startswith(str(package_dir.resolve())):
        raise CheckerError(f"another package named {top!r} is imported already ({getattr(held, '__file__', '?')}); "
                           f"run each checker in its own process", package_dir)
    sys.path.insert(0, str(package_dir.resolve()))
    while True:
        try:
            loaded = importlib.import_module(module)
            break
        except ImportError as e:
            missing = (e.name or "") if isinstance(e, ModuleNotFoundError) else _missing_name(e)
            if missing.split(".")[0] not in STUBBABLE or missing in sys.modules or missing in _STUBBED:
                raise CheckerError(f"importing {checker}'s eval needs {missing or e}: install it "
                                   f"({type(e).__name__}: {e})", package_dir) from e
            _install_stub(missing)
            _STUBBED.append(missing)
    _LOADED[key] = loaded
    return loaded, list(_STUBBED)


def kernelbench_eval(checkout: str | Path) -> tuple[types.ModuleType, list[str]]:
    """KernelBench's `kernelbench.eval` module from a checkout, and the modules stubbed for it."""
    src = Path(checkout) / "src"
    if not (src / "kernelbench" / "eval.py").is_file():
        raise CheckerError("not a KernelBench checkout: no src/kernelbench/eval.py", checkout)
    return _import(src, "kernelbench.eval", KERNELBENCH)


def kbv_eval(checkout: str | Path) -> tuple[types.ModuleType, list[str]]:
    """KernelBench-Verified's `src.eval` module from a checkout, and the modules stubbed for it."""
    root = Path(checkout)
    if not (root / "src" / "eval.py").is_file() or not (root / "hidden_tests").is_dir():
        raise CheckerError("not a KernelBench-Verified checkout: no src/eval.py and hidden_tests/", checkout)
    return _import(root, "src.eval", KBV)


def native_tolerance(module: types.ModuleType) -> float | None:
    """The fp32 tolerance an eval module judges at by itself (None: it has no tolerance function)."""
    fn = getattr(module, "get_tolerance_for_precision", None)
    if fn is None:
        return None
    import torch

    return float(fn(torch.float32))


def hidden_test_path(checkout: str | Path, level: int, number: int) -> Path:
    """KBV's hidden test file for a problem, as its `get_hidden_test_path` names it."""
    return Path(checkout) / "hidden_tests" / f"level{level}" / f"{number}_hidden.py"


def kbv_problem_path(checkout: str | Path, level: int, file_name: str) -> Path:
    """KBV's own copy of a problem file (what its scripts hand its eval, and its hidden tests load)."""
    return Path(checkout) / "KernelBench" / f"level{level}" / file_name


# -- running one submission ------------------------------------------------------------------------

@contextlib.contextmanager
def patched_tolerance(module: types.ModuleType, tolerance: float | None) -> Iterator[tuple[float | None, str]]:
    """While inside, `module` judges fp32 at `tolerance` (None: as it does by itself); yields the
    tolerance in force and whether it was `eval` or `patched`. The eval looks the function up in
    its module's globals at every trial, so replacing it there is enough."""
    native = native_tolerance(module)
    if tolerance is None or (native is not None and math.isclose(tolerance, native)):
        yield native, "eval"
        return
    original = getattr(module, "get_tolerance_for_precision", None)
    if original is None:
        raise CheckerError(f"{module.__name__} has no get_tolerance_for_precision to set {tolerance:g} through")
    import torch

    def fixed(precision: Any) -> float:
        dtype = module.get_torch_dtype_from_string(precision) if isinstance(precision, str) else precision
        return tolerance if dtype == torch.float32 else original(precision)

    module.get_tolerance_for_precision = fixed
    try:
        yield tolerance, "patched"
    finally:
        module.get_tolerance_for_precision = original


def _floats(values: Any) -> list[float]:
    """The numbers in a metadata list such as ['0.123456'] or ['config_2: 0.5']."""
    out = []
    for v in values if isinstance(values, list) else [values] if values else []:
        m = re.search(r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)\s*$", str(v))
        if m:
            out.append(float(m.group(1)))
    return out


_ERROR_KEYS = ("compilation_error", "runtime_error", "correctness_issue", "hidden_runtime_error",
               "hidden_shape_mismatch", "hidden_correctness_issue", "hidden_check_error")


def _verdict(checker: str, result: Any, tolerance: tuple[float | None, str], stubbed: list[str],
             started: float, log: str) -> Verdict:
    if result is None:  # KernelBench returns None for a lock-file error: "retry"
        return Verdict(checker, False, False, *tolerance, error="the eval returned no result (it asks for a retry)",
                       seconds=time.perf_counter() - started, stubbed=stubbed, log=log[-_LOG_TAIL:])
    meta = getattr(result, "metadata", {}) or {}
    errors = [f"{k}: {str(meta[k])[:300]}" for k in _ERROR_KEYS if meta.get(k)]
    trials = " ".join(str(meta[k]) for k in ("correctness_trials", "hidden_correctness_trials") if meta.get(k))
    correct = bool(result.correctness)
    return Verdict(checker, bool(result.compiled), correct, *tolerance, trials=trials,
                   max_difference=_floats(meta.get("max_difference")),
                   hidden_max_difference=_floats(meta.get("hidden_max_difference")),
                   error="; ".join(errors), seconds=time.perf_counter() - started, stubbed=stubbed,
                   log="" if correct else log[-_LOG_TAIL:])


def _run(checker: str, module: types.ModuleType, stubbed: list[str], tolerance: float | None,
         kwargs: dict[str, Any]) -> Verdict:
    import torch

    started = time.perf_counter()
    out = io.StringIO()
    with patched_tolerance(module, tolerance) as used:
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                result = module.eval_kernel_against_ref(device=torch.cuda.current_device(), **kwargs)
        except Exception as e:  # the eval raised (its own clean-up after a CUDA error, say): not correct
            return Verdict(checker, True, False, *used, error=f"the eval raised {type(e).__name__}: {str(e)[:300]}",
                           raised=True, seconds=time.perf_counter() - started, stubbed=stubbed,
                           log=out.getvalue()[-_LOG_TAIL:])
    return _verdict(checker, result, used, stubbed, started, out.getvalue())


def kernelbench_verdict(problem_src: str, submission_src: str, trials: int = 5, tolerance: float | None = None,
                        checkout: str | Path = "third_party/KernelBench") -> Verdict:
    """KernelBench's `eval_kernel_against_ref` on one submission: `trials` correctness trials at
    the eval's own fp32 tolerance, or at `tolerance` (patched in for the call)."""
    module, stubbed = kernelbench_eval(checkout)
    return _run(KERNELBENCH, module, stubbed, tolerance,
                dict(original_model_src=problem_src, custom_model_src=submission_src,
                     num_correct_trials=trials, measure_performance=False))


def kbv_verdict(problem_src: str, submission_src: str, hidden_test_path: str | Path, trials: int = 5,
                checkout: str | Path = "third_party/kernel_bench_verified", tolerance: float | None = None) -> Verdict:
    """KernelBench-Verified's `eval_kernel_against_ref` on one submission: `trials` official
    trials, then the hidden configs of `hidden_test_path`, as its eval_from_generations does (with
    no trials, the hidden configs alone), at its own fp32 tolerance or at `tolerance`."""
    module, stubbed = kbv_eval(checkout)
    return _run(KBV, module, stubbed, tolerance,
                dict(original_model_src=problem_src, custom_model_src=submission_src, num_correct_trials=trials,
                     measure_performance=False, hidden_test_path=str(hidden_test_path)))
