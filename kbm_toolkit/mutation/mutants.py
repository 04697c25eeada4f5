"""Mutants: a substrate rewritten at one rule site, with a stable id and one display name."""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from typing import Iterable

from kbm_toolkit.mutation.rules import Rule, Site
from kbm_toolkit.problems.substrate import FILES, Substrate


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Mutant:
    """A substrate whose kernel.cu (or launch.py) differs at exactly one site by one rule."""

    id: str
    problem: str
    rule: str
    family: str
    target: str
    site: Site
    substrate_hash: str
    kernel_source: str
    launcher_source: str
    position: int | None = None
    """Where a positioned substrate's mutant is launched (`mutation.positions`): the index of
    that launch in the official forward; None: at every launch of the kernels it changes."""
    launches: int | None = None
    """How many launches the official forward makes (None: not positioned)."""
    launch: str | None = None
    """`NAME#K`: the K-th launch of kernel NAME, the one that runs the mutated image."""

    @property
    def file(self) -> str:
        """The substrate file the mutant rewrites (`kernel.cu` or `launch.py`)."""
        return FILES[self.target]

    @property
    def name(self) -> str:
        """The one display name used everywhere: problem, file:line:col, rule, the rewrite."""
        before, after = changed_part(self.site.original, self.site.replacement)
        where = f" at launch {self.position + 1} of {self.launches} ({self.launch})" if self.launch else ""
        return (f"{self.problem} {self.file}:{self.site.line}:{self.site.col} {self.rule}: "
                f"replace {before!r} with {after!r}{where}")

    def diff(self, substrate: Substrate) -> str:
        """Unified diff of the mutated file against the substrate's."""
        before = substrate.file(self.target)
        after = self.kernel_source if self.target == "kernel" else self.launcher_source
        path = f"{self.problem}/{self.file}"
        return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                            f"a/{path}", f"b/{path}", n=2))


_TOKENS = re.compile(r"\s+|\w+|.", re.S)


def changed_part(original: str, replacement: str) -> tuple[str, str]:
    """The tokens that differ between a site's text and its rewrite, with one token of context
    when the change is a pure insertion or deletion (long sites read as their actual edit)."""
    a, b = _TOKENS.findall(original), _TOKENS.findall(replacement)
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    if (i == len(a) - j or i == len(b) - j) and i > 0:
        i -= 1
    return "".join(a[i:len(a) - j]).strip(), "".join(b[i:len(b) - j]).strip()


def mutant_id(problem: str, substrate_hash: str, rule: str, start: int, end: int, replacement: str) -> str:
    """A mutant's stable id; the problem is part of it because two problems may share one substrate
    source (KernelBench has problems that differ only in their sizes)."""
    return _sha(f"{problem}\0{substrate_hash}\0{rule}\0{start}\0{end}\0{replacement}")[:12]


def generate(substrate: Substrate, rules: Iterable[Rule]) -> list[Mutant]:
    """Every mutant of `substrate` under `rules`, in rule order then source order."""
    kernel = substrate.source
    launcher = substrate.launcher_source
    base = substrate.content_hash
    mutants = []
    for rule in rules:
        text = kernel if rule.target == "kernel" else launcher
        for site in rule.sites(text):
            mutated = rule.apply(text, site)
            mutants.append(Mutant(
                id=mutant_id(substrate.problem_key, base, rule.name, site.start, site.end, site.replacement),
                problem=substrate.problem_key, rule=rule.name, family=rule.family,
                target=rule.target, site=site, substrate_hash=base,
                kernel_source=mutated if rule.target == "kernel" else kernel,
                launcher_source=mutated if rule.target == "launcher" else launcher))
    return mutants
