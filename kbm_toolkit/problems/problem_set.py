"""The problems kbm can see: its built-in set, and a KernelBench checkout when one is given."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.paths import data_dir
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import has_substrate

LEVELS_IN_SCOPE = ("level1", "level2", "level3")
"""KernelBench level 4 downloads model weights at run time: out of scope."""

_FILE_RE = re.compile(r"^(\d+)_(.+)\.py$")


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

    @property
    def has_kernelbench(self) -> bool:
        """Whether a KernelBench checkout is among the roots."""
        return any(origin == "kernelbench" for origin, _ in self.roots)

    def with_substrates(self, refs: Iterable[str] = (), level: str | None = None) -> list[Problem]:
        """The problems named by `refs`, or, when none are named, every one (of `level`) with a
        substrate; ProblemError when that leaves none (rather than doing nothing)."""
        refs = list(refs)
        selected = self.select(refs, level)
        if refs:
            return selected
        chosen = [p for p in selected if has_substrate(p)]
        if not chosen:
            raise self.nothing_selected(level, "with a substrate in " + ", ".join(str(r) for _, r in self.roots))
        return chosen

    def nothing_selected(self, level: str | None, lacking: str) -> ProblemError:
        """The one-line error for a selection that came out empty, e.g. "no problem of level1 with a substrate"."""
        return ProblemError(f"no problem{f' of {level}' if level else ''} {lacking}"
                            + ("" if self.has_kernelbench else "; KernelBench's levels need --kernelbench CHECKOUT"))


def kernelbench_root(checkout: Path) -> Path:
    """The folder holding `level1/`…: the checkout's `KernelBench/`, or the path itself."""
    for candidate in (checkout / "KernelBench", checkout):
        if (candidate / "level1").is_dir():
            return candidate
    raise ProblemError("not a KernelBench checkout: no KernelBench/level1 folder", checkout)
