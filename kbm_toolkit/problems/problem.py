"""A benchmark problem in KernelBench format: the file, and the file executed.

A problem file defines `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()` and module
level size constants. Building its model and inputs with torch is `problems.tensors`' part.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.problems.constants import (constant_names, is_constant_value, model_constants, override_constants,
                                            static_constants)

OPTIONAL_PACKAGES = {"einops": "level3"}
"""Packages some benchmark problems import that kbm installs only as an extra: module -> extra."""


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
    """The pack it comes from: `demo` (kbm's own set), `kernelbench` (a user's checkout) or a pack's name
    (stores written before packs say `builtin` for `demo`)."""
    stored_constants: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """The constants a store recorded for it (`problem_from_row`): they stand for the file's."""
    substrate_dir: Path | None = field(default=None, compare=False, repr=False)
    """Its pack's substrate folder for it (there or not); None: `substrates/<level>/<id>_<Name>` of kbm's own."""

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
        static = static_constants(self.source)
        return static if static is not None else self.load().constants

    def model_constants(self) -> frozenset[str] | None:
        """The module constants the reference model can depend on (`constants.model_constants`);
        None when the file does not let that be told."""
        return model_constants(self.source)

    def constants_text(self) -> str | None:
        """The module constants as a store keeps them (a Python literal: tuples stay tuples);
        None when the file cannot say."""
        try:
            return repr(self.constants())
        except ProblemError:
            return None

    def store_row(self) -> dict[str, Any]:
        """The problem's row in a store's `problems` table."""
        return {"key": self.key, "level": self.level, "number": self.number, "name": self.name,
                "origin": self.origin, "path": str(self.path), "source_hash": self.source_hash,
                "constants": self.constants_text()}

    def record(self) -> dict[str, Any]:
        """The problem as a plain record a worker task carries (`from_record` reads it back)."""
        return {"key": self.key, "level": self.level, "number": self.number, "name": self.name,
                "path": str(self.path), "origin": self.origin, "stored_constants": self.stored_constants,
                "substrate_dir": str(self.substrate_dir) if self.substrate_dir is not None else None}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "Problem":
        """A Problem from the plain record a task carries."""
        folder = data.get("substrate_dir")
        return cls(**{**data, "path": Path(data["path"]), "substrate_dir": Path(folder) if folder else None})

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
        known = set(constant_names(tree))
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ProblemError(
                f"no module constant {', '.join(map(repr, unknown))} to override "
                f"(constants: {', '.join(sorted(known)) or 'none'})", problem.path)
        if overrides:
            tree = override_constants(tree, overrides)
        namespace: dict[str, Any] = {"__name__": f"kbm_problem_{problem.level.replace('/', '_')}_{problem.number}",
                                     "__file__": str(problem.path)}
        try:
            exec(compile(tree, str(problem.path), "exec"), namespace)
        except Exception as e:  # the file is user input: report any failure as a problem error
            extra = OPTIONAL_PACKAGES.get(e.name) if isinstance(e, ModuleNotFoundError) else None
            hint = f" (pip install 'kbm-toolkit[{extra}]')" if extra else ""
            raise ProblemError(f"executing the file raised {type(e).__name__}: {e}{hint}", problem.path) from e
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(namespace.get(n))]
        if missing:
            raise ProblemError(f"not a KernelBench problem: missing {', '.join(missing)}", problem.path)
        constants = {name: namespace[name] for name in constant_names(tree)
                     if is_constant_value(namespace.get(name))}
        return cls(problem, namespace, constants)

    @property
    def Model(self) -> type:  # noqa: N802 - mirrors the problem file's name
        """The reference `nn.Module` class."""
        return self.namespace["Model"]

    def call(self, name: str) -> Iterable[Any]:
        """The list `get_inputs()` or `get_init_inputs()` returns; ProblemError naming the file otherwise."""
        try:
            result = self.namespace[name]()
        except Exception as e:
            raise ProblemError(f"{name}() raised {type(e).__name__}: {e}", self.problem.path) from e
        if not isinstance(result, (list, tuple)):
            raise ProblemError(f"{name}() must return a list, got {type(result).__name__}",
                               self.problem.path)
        return result


def problem_from_row(key: str, row: dict[str, Any]) -> Problem:
    """A Problem from its store row: enough to build a protocol's specs without the file."""
    try:
        constants = ast.literal_eval(row["constants"]) if row.get("constants") else None
    except (ValueError, SyntaxError):  # written by hand, or by a kbm that stored something else
        constants = None
    level, _, stem = key.rpartition("/")  # a pack's keys hold two slashes: mybench/level1/1_MyRelu
    return Problem(key, row.get("level") or level, int(row.get("number") or 0),
                   row.get("name") or stem.split("_", 1)[-1], Path(row.get("path") or key), row.get("origin") or "",
                   constants if isinstance(constants, dict) else None)
