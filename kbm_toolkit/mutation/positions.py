"""Mutants with a depth: a kernel mutant launched at one place in a whole network.

A level-3 substrate launches the same kernel at many layers, but a fault in a generated
whole-model kernel sits at one place in the network. For a substrate whose `substrate.toml` asks
for it (`[mutation] positioned = true`), each kernel mutant that screening kept becomes one
mutant per quartile of depth: the mutated image is used for one launch — one launch, at the
official shapes, of a kernel whose code the mutation changed (`cuda.cubin.changed_kernels`) —
and the original image for every other. The launch is drawn by a hash of the mutated image and
the quartile, so two sites that compile to the same image land at the same launches and stay
duplicates. Launcher mutants (host code, run at every layer that reaches their line), mutants
whose changed kernels the official forward never launches, compile errors and equivalents stay
as they were, without a position.

The evaluator counts launches by kernel (`launch = "NAME#K"`: the K-th launch of NAME, from 0),
so at other shapes the mutation stays at the same layer while the total launch count changes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Iterable

from kbm_toolkit.cuda.cubin import changed_kernels, sections
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.mutation.mutants import Mutant, mutant_id
from kbm_toolkit.mutation.screening import Screened
from kbm_toolkit.vocabulary import MutantStatus, depth_quartile


@dataclass(frozen=True)
class Placement:
    """Where in the forward a mutant's image is launched."""

    position: int
    """The launch's index in the official forward's launch sequence, from 0."""
    launches: int
    """How many launches that forward makes."""
    launch: str
    """`NAME#K`: the K-th launch (from 0) of kernel NAME, which is what the evaluator counts."""

    @property
    def quartile(self) -> int:
        """The quartile of depth, 0 (the input end) to 3 (the output end)."""
        return depth_quartile(self.position, self.launches)


def launch_sequence(problem: Any, substrate: Any) -> list[str]:
    """The kernels the substrate launches, in order, on the problem's official shapes (a dry run
    on meta tensors: no GPU)."""
    from kbm_toolkit.cuda.dryrun import dry_run

    return [launch.kernel for launch in dry_run(problem, substrate).launches]


def placements(sequence: list[str], kernels: set[str], key: str) -> list[Placement]:
    """One launch of any of `kernels` per quartile of depth of `sequence` that has one, drawn by
    a hash of `key` and the quartile; in order of depth."""
    n = len(sequence)
    by_quartile: dict[int, list[int]] = {}
    for i, name in enumerate(sequence):
        if name in kernels:
            by_quartile.setdefault(depth_quartile(i, n), []).append(i)
    found = []
    for quartile, candidates in sorted(by_quartile.items()):
        draw = int(hashlib.sha256(f"{key}\0{quartile}".encode()).hexdigest()[:12], 16)
        at = candidates[draw % len(candidates)]
        found.append(Placement(at, n, f"{sequence[at]}#{sequence[:at].count(sequence[at])}"))
    return found


def positioned_id(mutant_id: str, launch: str) -> str:
    """A placed mutant's id: its site mutant's, and the launch."""
    return hashlib.sha256(f"{mutant_id}\0{launch}".encode()).hexdigest()[:12]


def stored(rows: Iterable[dict[str, Any]], generated: Iterable[Mutant]) -> list[Mutant]:
    """The mutants of stored rows, from the site mutants kbm's rules make now (`generated`), in
    their order: a placed row is its site's mutant at the row's launch (by depth). Rows whose
    site the rules no longer make are left out."""
    by_site: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        site = (mutant_id(r["problem"], r["substrate_hash"], r["rule"], r["start"], r["end"], r["replacement"])
                if r.get("launch") else r["id"])
        by_site.setdefault(site, []).append(r)
    found: list[Mutant] = []
    for m in generated:
        for r in sorted(by_site.get(m.id, ()), key=lambda r: r.get("position") or 0):
            if not r.get("launch"):
                found.append(m)
            elif positioned_id(m.id, r["launch"]) == r["id"]:
                found.append(replace(m, id=r["id"], position=r["position"], launches=r["launches"],
                                     launch=r["launch"]))
    return found


def place(screened: list[Screened], sequence: list[str], original_kernel: str, arch: str) -> list[Screened]:
    """The screened mutants of a positioned substrate, each kernel mutant that compiled to an
    image of its own replaced by its placed mutants (deduplicated again, by image and launch)."""
    original = sections(compile_source(original_kernel, arch).cubin)  # once: every mutant is compared with it
    kernels = set(sequence)
    placed: list[Screened] = []
    seen: dict[tuple[str | None, str, str], str] = {}
    for s in screened:
        m = s.mutant
        if m.target != "kernel" or s.status not in (MutantStatus.DISTINCT, MutantStatus.DUPLICATE):
            placed.append(s)
            continue
        image = compile_source(m.kernel_source, arch)  # cached since screening compiled it
        where = placements(sequence, changed_kernels(original, sections(image.cubin), kernels), image.image_hash)
        if not where:  # no kernel it changes runs at the official shapes: kept whole
            placed.append(s)
            continue
        for p in where:
            child = replace(m, id=positioned_id(m.id, p.launch), position=p.position, launches=p.launches,
                            launch=p.launch)
            key = (s.image_hash, m.launcher_source, p.launch)
            if key in seen:
                placed.append(replace(s, mutant=child, status=MutantStatus.DUPLICATE, duplicate_of=seen[key]))
            else:
                seen[key] = child.id
                placed.append(replace(s, mutant=child, status=MutantStatus.DISTINCT, duplicate_of=None))
    return placed
