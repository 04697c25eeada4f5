"""Substrates: our correct CUDA implementation of each problem, the target of mutation.

A substrate is a folder `substrates/<level>/<id>_<Name>/` (of kbm, or of the problem's pack) holding `kernel.cu` (every line of device
code: the only file rules rewrite) and `launch.py` (the host side: `launch(k, model, *inputs)`
allocates outputs and launches kernels; it never computes with torch). An optional
`substrate.toml` lists extra shapes the gate tries (`[gate] shapes = [{dim = 1001}]`).
"""

from __future__ import annotations

import hashlib
import types
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from kbm_toolkit.errors import SubstrateError
from kbm_toolkit.paths import data_dir
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.tomlfile import load_toml


FILES = {"kernel": "kernel.cu", "launcher": "launch.py"}
"""A rule's target and the substrate file it rewrites."""


@dataclass(frozen=True)
class Substrate:
    """One problem's substrate folder."""

    problem_key: str
    folder: Path

    @property
    def kernel_path(self) -> Path:
        return self.folder / "kernel.cu"

    @property
    def launcher_path(self) -> Path:
        return self.folder / "launch.py"

    @cached_property
    def source(self) -> str:
        """The device source (`kernel.cu`)."""
        return self.kernel_path.read_text()

    @property
    def source_hash(self) -> str:
        """sha256 of `kernel.cu`: what the gate's verdict is for."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def launcher_source(self) -> str:
        """The host source (`launch.py`)."""
        return self.launcher_path.read_text()

    @property
    def content_hash(self) -> str:
        """sha256 over both files (a store's `substrate_hash`): mutant ids are stable while neither changes."""
        return hashlib.sha256((self.source + "\0" + self.launcher_source).encode()).hexdigest()

    def file(self, target: str) -> str:
        """The text of the file a rule `target` (`kernel` or `launcher`) rewrites."""
        return self.source if target == "kernel" else self.launcher_source

    @cached_property
    def launcher(self) -> Callable[..., Any]:
        """`launch(k, model, *inputs)` from `launch.py`."""
        return self.launcher_from(self.launcher_source)

    def launcher_from(self, source: str) -> Callable[..., Any]:
        """`launch` from the text of a launcher (this substrate's, or a launcher mutant's)."""
        module = types.ModuleType(f"kbm_launch_{self.problem_key.replace('/', '_')}")
        module.__file__ = str(self.launcher_path)
        try:
            exec(compile(source, str(self.launcher_path), "exec"), module.__dict__)
        except Exception as e:
            raise SubstrateError(f"loading the launcher raised {type(e).__name__}: {e}",
                                 self.launcher_path) from e
        launch = getattr(module, "launch", None)
        if not callable(launch):
            raise SubstrateError("no launch(k, model, *inputs) function", self.launcher_path)
        return launch

    @cached_property
    def positioned(self) -> bool:
        """Whether its kernel mutants are each launched at one place in the forward
        (`[mutation] positioned = true`: level 3's whole networks, `mutation.positions`)."""
        path = self.folder / "substrate.toml"
        value = load_toml(path).get("mutation", {}).get("positioned", False) if path.is_file() else False
        if not isinstance(value, bool):
            raise SubstrateError("[mutation] positioned must be true or false", path)
        return value

    @cached_property
    def gate_shapes(self) -> list[dict[str, Any]]:
        """Extra module-constant overrides the gate tries (odd, non-aligned sizes)."""
        path = self.folder / "substrate.toml"
        if not path.is_file():
            return []
        shapes = load_toml(path).get("gate", {}).get("shapes", [])
        if not isinstance(shapes, list) or not all(isinstance(s, dict) for s in shapes):
            raise SubstrateError("[gate] shapes must be a list of tables", path)
        return shapes

    @property
    def probe_shape(self) -> dict[str, Any] | None:
        """The probe's overrides: the smallest gate shape (by the sum of its integer sizes); None
        (the official sizes) when the substrate declares none."""
        ranked = sorted(self.gate_shapes, key=lambda s: sum(v for v in s.values() if isinstance(v, int)))
        return ranked[0] if ranked else None


def substrates_root() -> Path:
    """The shipped `substrates/` folder."""
    return data_dir("substrates")


def substrate_folder(problem: Problem, root: Path | None = None) -> Path:
    """Where `problem`'s substrate lives: in its pack (`Problem.substrate_dir`), else, or under `root`
    when one is given, `<root>/<level>/<id>_<Name>` (root: kbm's `substrates/`)."""
    if root is None and problem.substrate_dir is not None:
        return problem.substrate_dir
    return (root or substrates_root()) / problem.level / f"{problem.number}_{problem.name}"


def substrate_for(problem: Problem, root: Path | None = None) -> Substrate:
    """The substrate of `problem`; SubstrateError if it has none or the folder is incomplete."""
    folder = substrate_folder(problem, root)
    if not folder.is_dir():
        raise SubstrateError(f"no substrate for {problem.key}", folder)
    for name in ("kernel.cu", "launch.py"):
        if not (folder / name).is_file():
            raise SubstrateError(f"substrate is missing {name}", folder)
    return Substrate(problem.key, folder)


def has_substrate(problem: Problem, root: Path | None = None) -> bool:
    """Whether a substrate folder exists for `problem`."""
    return substrate_folder(problem, root).is_dir()
