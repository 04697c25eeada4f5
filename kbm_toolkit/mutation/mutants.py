"""Turn substrates into mutants, one rule site each, and screen them with NVRTC.

Screening compiles every kernel mutant (in parallel, cached by source hash) and classifies it:
`compile_error`, `equivalent` (its cubin, and launcher, equal the original's), `duplicate` (equal
to an earlier mutant's: it points at that one) or `distinct`. Nothing is dropped silently: every
mutant and its status goes to the store.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from kbm_toolkit.errors import CompileError
from kbm_toolkit.mutation.rules import TARGETS, Rule, Site
from kbm_toolkit.problems.substrate import Substrate

STATUSES = ("compile_error", "equivalent", "duplicate", "distinct")


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

    @property
    def file(self) -> str:
        return TARGETS[self.target]

    @property
    def name(self) -> str:
        """The one display name used everywhere: problem, file:line:col, rule, the rewrite."""
        before, after = changed_part(self.site.original, self.site.replacement)
        return (f"{self.problem} {self.file}:{self.site.line}:{self.site.col} {self.rule}: "
                f"replace {before!r} with {after!r}")

    def diff(self, substrate: Substrate) -> str:
        """Unified diff of the mutated file against the substrate's."""
        before = substrate.source if self.target == "kernel" else substrate.launcher_path.read_text()
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


def substrate_hash(substrate: Substrate) -> str:
    """sha256 over both files of a substrate: mutant ids are stable while neither changes."""
    return _sha(substrate.source + "\0" + substrate.launcher_path.read_text())


def mutant_id(problem: str, substrate_hash: str, rule: str, start: int, end: int, replacement: str) -> str:
    """A mutant's stable id; the problem is part of it because two problems may share one substrate
    source (KernelBench has problems that differ only in their sizes)."""
    return _sha(f"{problem}\0{substrate_hash}\0{rule}\0{start}\0{end}\0{replacement}")[:12]


def in_sample(mutant: str, fraction: float | None) -> bool:
    """Whether a mutant is in the deterministic `fraction` sample of its pool (None: everything).

    Ids are hashes, so their leading bits are uniform: a sample is a random draw, and a larger
    fraction holds every mutant of a smaller one (samples nest, so runs can widen one).
    """
    return fraction is None or fraction >= 1.0 or int(mutant[:8], 16) < fraction * 16**8


def generate(substrate: Substrate, rules: Iterable[Rule]) -> list[Mutant]:
    """Every mutant of `substrate` under `rules`, in rule order then source order."""
    kernel = substrate.source
    launcher = substrate.launcher_path.read_text()
    base = substrate_hash(substrate)
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


@dataclass
class Screened:
    """A mutant after compilation and dedup."""

    mutant: Mutant
    status: str
    image_hash: str | None = None
    duplicate_of: str | None = None
    compile_ms: float | None = None
    message: str = ""


def _compile(job: tuple[str, str]) -> tuple[str | None, float, str]:
    from kbm_toolkit.cuda.nvrtc import compile_source

    source, arch = job
    try:
        image = compile_source(source, arch)
        return image.image_hash, image.compile_ms, ""
    except CompileError as e:
        return None, 0.0, e.message


def screen(mutants: list[Mutant], original_kernel: str, original_launcher: str, arch: str,
           workers: int | None = None, on_progress: Callable[[int], Any] | None = None) -> list[Screened]:
    """Compile every distinct kernel source once, in parallel, and classify each mutant."""
    from kbm_toolkit.cuda.nvrtc import compile_source

    original_image = compile_source(original_kernel, arch).image_hash
    sources = sorted({m.kernel_source for m in mutants if m.kernel_source != original_kernel})
    images: dict[str, tuple[str | None, float, str]] = {original_kernel: (original_image, 0.0, "")}
    workers = workers or os.cpu_count() or 1
    if sources:
        with ProcessPoolExecutor(workers) as pool:
            for source, result in zip(sources, pool.map(_compile, [(s, arch) for s in sources], chunksize=4)):
                images[source] = result
                if on_progress:
                    on_progress(1)
    seen: dict[tuple[str, str], str] = {}
    original_key = (original_image, _sha(original_launcher))
    screened = []
    for m in mutants:
        image, ms, message = images[m.kernel_source]
        if image is not None and m.target == "launcher":
            try:
                compile(m.launcher_source, "launch.py", "exec")
            except SyntaxError as e:
                image, message = None, f"launch.py:{e.lineno}: {e.msg}"
        if image is None:
            screened.append(Screened(m, "compile_error", None, None, ms, message))
            continue
        key = (image, _sha(m.launcher_source))
        if key == original_key:
            screened.append(Screened(m, "equivalent", image, None, ms))
        elif key in seen:
            screened.append(Screened(m, "duplicate", image, seen[key], ms))
        else:
            seen[key] = m.id
            screened.append(Screened(m, "distinct", image, None, ms))
    return screened
