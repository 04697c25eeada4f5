"""Benchmark problems in KernelBench format, loaded and seeded exactly as KernelBench does.

A problem file defines `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()` and module
level size constants. Weights are built once under seed 42 on the CPU (bit-identical to
KernelBench's); each trial reseeds and calls `get_inputs()`.
"""

from __future__ import annotations

import ast
import hashlib
import operator
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.paths import data_dir

WEIGHT_SEED = 42
"""KernelBench seeds init inputs and weights with 42 (eval.py's `seed_num`)."""

TRIAL_SEED = 42
"""The seed from which the official check draws its per-trial seeds."""

LEVELS_IN_SCOPE = ("level1", "level2", "level3")
"""KernelBench level 4 downloads model weights at run time: out of scope."""

_FILE_RE = re.compile(r"^(\d+)_(.+)\.py$")
_CONSTANT_TYPES = (int, float, bool)


@dataclass(frozen=True)
class Problem:
    """One benchmark task: a KernelBench-format file and where it came from."""

    key: str
    """Stable name, `<level>/<id>_<Name>`, e.g. `level1/23_Softmax` or `demo/2_Softmax`."""
    level: str
    number: int
    name: str
    path: Path
    origin: str
    """`builtin` (kbm's own set) or `kernelbench` (a user's checkout)."""
    stored_constants: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """The constants a store recorded for it (`problem_from_row`): they stand for the file's."""

    @property
    def source(self) -> str:
        """The file's text; ProblemError when the file is not here (e.g. no KernelBench checkout)."""
        try:
            return self.path.read_text()
        except OSError as e:
            raise ProblemError(f"cannot read the problem file: {e.strerror}", self.path) from None

    @property
    def source_hash(self) -> str:
        """sha256 of the file, to notice when a checkout changes under stored results."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    def constants(self) -> dict[str, Any]:
        """The module constants; read without running the file (or importing torch) when every
        one is plain arithmetic on literals, as in KernelBench's files."""
        if self.stored_constants is not None:
            return dict(self.stored_constants)
        static = _static_constants(self.source)
        return static if static is not None else self.load().constants

    def load(self, overrides: dict[str, Any] | None = None) -> "ProblemModule":
        """Execute the file in a fresh namespace, with module constants overridden."""
        return ProblemModule.from_problem(self, overrides or {})


@dataclass
class ProblemModule:
    """A problem file executed in its own namespace."""

    problem: Problem
    namespace: dict[str, Any]
    constants: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_problem(cls, problem: Problem, overrides: dict[str, Any]) -> "ProblemModule":
        """Run the file and check it has what a KernelBench problem must have."""
        source = problem.source
        try:
            tree = ast.parse(source, filename=str(problem.path))
        except SyntaxError as e:
            raise ProblemError(f"syntax error: {e.msg}", f"{problem.path}:{e.lineno}") from None
        known = set(_constant_names(tree))
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ProblemError(
                f"no module constant {', '.join(map(repr, unknown))} to override "
                f"(constants: {', '.join(sorted(known)) or 'none'})", problem.path)
        if overrides:
            tree = _override_constants(tree, overrides)
        namespace: dict[str, Any] = {"__name__": f"kbm_problem_{problem.level}_{problem.number}",
                                     "__file__": str(problem.path)}
        try:
            exec(compile(tree, str(problem.path), "exec"), namespace)
        except Exception as e:  # the file is user input: report any failure as a problem error
            raise ProblemError(f"executing the file raised {type(e).__name__}: {e}", problem.path) from e
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(namespace.get(n))]
        if missing:
            raise ProblemError(f"not a KernelBench problem: missing {', '.join(missing)}", problem.path)
        constants = {name: namespace[name] for name in _constant_names(tree)
                     if _is_constant_value(namespace.get(name))}
        return cls(problem, namespace, constants)

    @property
    def Model(self) -> type:  # noqa: N802 - mirrors the problem file's name
        """The reference `nn.Module` class."""
        return self.namespace["Model"]

    def init_inputs(self) -> list[Any]:
        """`get_init_inputs()` under seed 42, as KernelBench calls it."""
        set_seed(WEIGHT_SEED)
        return list(self._call("get_init_inputs"))

    def build_model(self, device: str = "cpu") -> Any:
        """The reference model: weights drawn once on the CPU under seed 42, then moved."""
        import torch

        init = self.init_inputs()
        with torch.no_grad():
            set_seed(WEIGHT_SEED)
            try:
                model = self.Model(*init)
            except Exception as e:
                raise ProblemError(f"Model(*get_init_inputs()) raised {type(e).__name__}: {e}",
                                   self.problem.path) from e
        return model.to(device)

    def inputs(self, seed: int, device: str = "cpu") -> list[Any]:
        """`get_inputs()` under `seed`, built directly on `device`; integer dtypes are kept."""
        import torch

        set_seed(seed)
        with torch.device(device):
            values = self._call("get_inputs")
        return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]

    def _call(self, name: str) -> Iterable[Any]:
        try:
            result = self.namespace[name]()
        except Exception as e:
            raise ProblemError(f"{name}() raised {type(e).__name__}: {e}", self.problem.path) from e
        if not isinstance(result, (list, tuple)):
            raise ProblemError(f"{name}() must return a list, got {type(result).__name__}",
                               self.problem.path)
        return result


def set_seed(seed: int) -> None:
    """Seed torch's CPU and CUDA generators, as KernelBench's `set_seed` does."""
    import torch

    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def trial_seeds(count: int, seed: int = TRIAL_SEED) -> list[int]:
    """The per-trial seeds the official check draws: `randint(0, 2**32 - 1)` after seeding 42.

    Drawn from a private copy of torch's CPU generator (the same sequence), so asking leaves the
    global RNG alone and needs no torch; cached, since protocols ask for every problem.
    """
    return list(_trial_seeds(count, seed))


@lru_cache(maxsize=64)
def _trial_seeds(count: int, seed: int) -> tuple[int, ...]:
    # torch's CPU generator is MT19937 seeded with init_genrand; randint(0, 2**32 - 1) takes one
    # 64-bit draw (two outputs) modulo the range. Done here in Python so that scoring, which names
    # inputs by their seeds, never imports torch; a test checks it against torch itself.
    outputs = _mt19937(seed)
    span = 2**32 - 1
    return tuple(((next(outputs) << 32) | next(outputs)) % span for _ in range(count))


def _mt19937(seed: int) -> Iterator[int]:
    """The 32-bit outputs of MT19937 initialised with `seed` (init_genrand)."""
    state = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        state.append((1812433253 * (state[-1] ^ (state[-1] >> 30)) + i) & 0xFFFFFFFF)
    while True:
        for i in range(624):
            y = (state[i] & 0x80000000) | (state[(i + 1) % 624] & 0x7FFFFFFF)
            state[i] = state[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        for y in state:
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            yield y ^ (y >> 18)


def _constant_names(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [e.id for e in elements if isinstance(e, ast.Name)]
    return names


def _override_constants(tree: ast.Module, overrides: dict[str, Any]) -> ast.Module:
    """Rewrite the module so each overridden constant is assigned its new value where it is defined.

    Constants computed from it later in the file (`bias_shape = (out_channels, 1, 1)`) then follow.
    Chained (`h = w = 128`) and tuple (`d, h, w = 8, 16, 16`) assignments are split per name.
    """
    body: list[ast.stmt] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            body.append(node)
            continue
        pairs: list[tuple[ast.expr, ast.expr]] = []
        for target in node.targets:
            if (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                    and len(target.elts) == len(node.value.elts)):
                pairs += list(zip(target.elts, node.value.elts))
            else:
                pairs.append((target, node.value))
        if not any(isinstance(t, ast.Name) and t.id in overrides for t, _ in pairs):
            body.append(node)
            continue
        for target, value in pairs:
            if isinstance(target, ast.Name) and target.id in overrides:
                v = overrides[target.id]
                value = ast.Constant(tuple(v) if isinstance(v, list) else v)  # TOML arrays are lists
            body.append(ast.copy_location(ast.Assign(targets=[target], value=value), node))
    tree = ast.Module(body=body, type_ignores=[])
    return ast.fix_missing_locations(tree)


_STATIC_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
               ast.USub: operator.neg, ast.UAdd: operator.pos}


@lru_cache(maxsize=1024)
def _static_constants(source: str) -> dict[str, Any] | None:
    """The module constants as running the file would leave them, or None when that needs running it."""
    tree = ast.parse(source)
    env: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            continue  # defines nothing a constant could depend on
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            return None  # a loop, an augmented assignment...: only running the file tells
        try:
            value = _static_value(node.value, env)
        except (KeyError, TypeError, ValueError, ArithmeticError):
            return None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts) \
                    and isinstance(value, (tuple, list)) and len(value) == len(target.elts):
                env.update({e.id: v for e, v in zip(target.elts, value)})
            else:
                return None
    return {name: env[name] for name in _constant_names(tree) if _is_constant_value(env.get(name))}


def _static_value(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _STATIC_OPS:
        return _STATIC_OPS[type(node.op)](_static_value(node.operand, env))
    if isinstance(node, ast.BinOp) and type(node.op) in _STATIC_OPS:
        return _STATIC_OPS[type(node.op)](_static_value(node.left, env), _static_value(node.right, env))
    if isinstance(node, (ast.Tuple, ast.List)):
        values = [_static_value(e, env) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    raise ValueError("not plain arithmetic on literals")


def _is_constant_value(value: Any) -> bool:
    if isinstance(value, _CONSTANT_TYPES):
        return True
    return isinstance(value, (tuple, list)) and all(isinstance(v, _CONSTANT_TYPES) for v in value)


def constants_text(problem: Problem) -> str | None:
    """The problem's module constants as a store keeps them (a Python literal: tuples stay tuples);
    None when the file cannot say."""
    try:
        return repr(problem.constants())
    except ProblemError:
        return None


def problem_from_row(key: str, row: dict[str, Any]) -> Problem:
    """A Problem from its store row: enough to build a protocol's specs without the file."""
    try:
        constants = ast.literal_eval(row["constants"]) if row.get("constants") else None
    except (ValueError, SyntaxError):  # written by hand, or by a kbm that stored something else
        constants = None
    return Problem(key, row.get("level") or key.split("/")[0], int(row.get("number") or 0),
                   row.get("name") or key.split("_", 1)[-1], Path(row.get("path") or key), row.get("origin") or "",
                   constants if isinstance(constants, dict) else None)


def resolve_problem(problems: dict[str, Problem], ref: str, where: str) -> Problem:
    """The one problem of `problems` that `ref` names (key, `level/id`, `id_Name` or `Name`); ProblemError if
    none or several do."""
    if ref in problems:
        return problems[ref]
    level, _, rest = ref.rpartition("/")
    hits = [p for p in problems.values()
            if (not level or p.level == level) and rest in (str(p.number), f"{p.number}_{p.name}", p.name)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise ProblemError(f"no problem matches {ref!r} (looked in {where})")
    raise ProblemError(f"{ref!r} is ambiguous: {', '.join(p.key for p in hits)}; give the level too")


class ProblemSet:
    """The problems kbm can see: its own built-in set, plus a KernelBench checkout if given."""

    def __init__(self, roots: list[tuple[str, Path]]) -> None:
        self.roots = roots
        self._problems: dict[str, Problem] | None = None

    @classmethod
    def discover(cls, kernelbench: str | Path | None = None) -> "ProblemSet":
        """Built-in problems, plus `kernelbench` (or `KBM_KERNELBENCH`) when set."""
        roots: list[tuple[str, Path]] = [("builtin", data_dir("problems"))]
        checkout = kernelbench or os.environ.get("KBM_KERNELBENCH")
        if checkout:
            roots.append(("kernelbench", kernelbench_root(Path(checkout))))
        return cls(roots)

    def problems(self) -> dict[str, Problem]:
        """Every problem, by key, in level then id order."""
        if self._problems is None:
            found: dict[str, Problem] = {}
            for origin, root in self.roots:
                for level_dir in sorted(p for p in root.iterdir() if p.is_dir()):
                    if origin == "kernelbench" and level_dir.name not in LEVELS_IN_SCOPE:
                        continue
                    for path in level_dir.glob("*.py"):
                        m = _FILE_RE.match(path.name)
                        if not m:
                            continue
                        key = f"{level_dir.name}/{m.group(1)}_{m.group(2)}"
                        found[key] = Problem(key, level_dir.name, int(m.group(1)), m.group(2),
                                             path, origin)
            self._problems = dict(sorted(found.items(), key=lambda kv: (kv[1].level, kv[1].number)))
        return self._problems

    def get(self, ref: str) -> Problem:
        """Resolve `level1/23_Softmax`, `level1/23`, `23_Softmax` or `Softmax` to one problem."""
        return resolve_problem(self.problems(), ref, ", ".join(str(r) for _, r in self.roots))

    def select(self, refs: Iterable[str] = (), level: str | None = None) -> list[Problem]:
        """The problems named by `refs`, or every problem (of `level`, if given) when none are."""
        refs = list(refs)
        if refs:
            return [self.get(r) for r in refs]
        return [p for p in self.problems().values() if level is None or p.level == level]


def kernelbench_root(checkout: Path) -> Path:
    """The folder holding `level1/`…: the checkout's `KernelBench/`, or the path itself."""
    for candidate in (checkout / "KernelBench", checkout):
        if (candidate / "level1").is_dir():
            return candidate
    raise ProblemError("not a KernelBench checkout: no KernelBench/level1 folder", checkout)
