"""The problems kbm can see: its built-in set, a KernelBench checkout when one is given, and packs."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.problems.pack import LEVELS_IN_SCOPE, Pack, builtin_packs, user_packs
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import has_substrate, substrates_root

def in_level(problem_level: str, level: str | None) -> bool:
    """Whether a problem of `problem_level` is selected by `--level level`: that level, or every
    level of a pack when `level` is the pack's name (`mybench` selects `mybench/level1`, …)."""
    return level is None or problem_level == level or problem_level.startswith(level.rstrip("/") + "/")


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
    """The problems kbm can see: those of its own packs (`demo`, `kernelbench` with a checkout) and of
    every other pack loaded, each pack's keys under its prefix."""

    def __init__(self, packs: Iterable[Pack | tuple[str, Path]]) -> None:
        # an (origin, folder) pair is a folder of <level>/<id>_<Name>.py with kbm's substrates (tests build these)
        self.packs = [p if isinstance(p, Pack) else Pack(p[0], "", Path(p[1]), Path(p[1]), substrates_root(),
                                                         levels=LEVELS_IN_SCOPE if p[0] == "kernelbench" else None)
                      for p in packs]
        self._problems: dict[str, Problem] | None = None

    @classmethod
    def discover(cls, kernelbench: str | Path | None = None, packs: Iterable[Pack] | None = None) -> "ProblemSet":
        """Built-in problems, `kernelbench` (or `KBM_KERNELBENCH`) when set, and `packs` (default:
        every pack loaded, `user_packs()`)."""
        return cls([*builtin_packs(kernelbench), *(user_packs() if packs is None else packs)])

    @property
    def roots(self) -> list[tuple[str, Path]]:
        """(pack name, problems folder) of every pack."""
        return [(p.name, p.problems) for p in self.packs]

    def problems(self) -> dict[str, Problem]:
        """Every problem, by key, in level then id order."""
        if self._problems is None:
            found: dict[str, Problem] = {}
            for pack in self.packs:
                found.update(pack.load_problems())
            self._problems = dict(sorted(found.items(), key=lambda kv: (kv[1].level, kv[1].number)))
        return self._problems

    def pack_of(self, problem: Problem) -> Pack | None:
        """The pack `problem` comes from (by its origin), if it is loaded here."""
        return next((p for p in self.packs if p.name == problem.origin), None)

    def get(self, ref: str) -> Problem:
        """Resolve `level1/23_Softmax`, `level1/23`, `23_Softmax` or `Softmax` to one problem."""
        return resolve_problem(self.problems(), ref, ", ".join(str(r) for _, r in self.roots))

    def select(self, refs: Iterable[str] = (), level: str | None = None) -> list[Problem]:
        """The problems named by `refs`, or every problem (of `level`, if given) when none are."""
        refs = list(refs)
        if refs:
            return [self.get(r) for r in refs]
        return [p for p in self.problems().values() if in_level(p.level, level)]

    @property
    def has_kernelbench(self) -> bool:
        """Whether a KernelBench checkout is among the roots."""
        return any(p.name == "kernelbench" for p in self.packs)

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
