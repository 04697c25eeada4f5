"""What the terminal UI shows, computed from the store alone (no Textual, no CUDA): the library
side of `kbm tui`, so the app only lays out what these functions return."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.problem import problem_from_row
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import FAMILIES
from kbm_toolkit.analysis.matrix import Matrix, killed, load_matrices, valid_at
from kbm_toolkit.analysis.score import run_protocol, witnessed


@dataclass
class Overview:
    """Everything the overview, patterns and problems screens need, computed once."""

    protocols: list[Protocol]
    matrices: dict[str, Matrix]
    witnessed: dict[str, set[str]]
    detected: dict[str, dict[str, set[str]]]
    """protocol → problem → detected mutants."""
    false_rejections: dict[str, int] = field(default_factory=dict)
    sample: dict[str, Any] | None = None
    """The store's sample (`Store.sample_summary`), None when every mutant is evaluated."""
    missing: dict[str, dict[str, Any]] = field(default_factory=dict)
    """protocol → what its figures lack: {"checks": problem → input ids never checked, "cells":
    problem → cells not evaluated}; only the protocols that lack some."""

    @property
    def total(self) -> int:
        return sum(len(w) for w in self.witnessed.values())

    def family_table(self) -> list[tuple[str, int, list[float | None]]]:
        """(family, witnessed, missed % per protocol), families in taxonomy order, then `all`."""
        family_of = {m: mx.mutants[m]["family"] for mx in self.matrices.values() for m in mx.mutants}
        rows = []
        for family in [*FAMILIES, "all"]:
            ids = {(k, m) for k, w in self.witnessed.items() for m in w if family in ("all", family_of[m])}
            if not ids:
                continue
            missed = [100.0 * sum(m not in self.detected[p.name].get(k, set()) for k, m in ids) / len(ids)
                      for p in self.protocols]
            rows.append((family, len(ids), missed))
        return rows

    def patterns(self) -> list[tuple[tuple[bool, ...], list[str]]]:
        """Distinct "which protocols miss this mutant" patterns, most common first (the UpSet view)."""
        groups: dict[tuple[bool, ...], list[str]] = {}
        for k, w in self.witnessed.items():
            for m in sorted(w):
                key = tuple(m not in self.detected[p.name].get(k, set()) for p in self.protocols)
                groups.setdefault(key, []).append(m)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def problems(self, protocol: str, level: str | None = None, family: str | None = None) -> list[tuple[str, int, int]]:
        """(problem, witnessed, missed by `protocol`), highest miss rate first; filterable."""
        rows = []
        for k, w in self.witnessed.items():
            mx = self.matrices[k]
            if level and mx.problem.level != level:
                continue
            ids = {m for m in w if family is None or mx.mutants[m]["family"] == family}
            if ids:
                rows.append((k, len(ids), len(ids - self.detected[protocol].get(k, set()))))
        return sorted(rows, key=lambda r: (-r[2] / r[1], r[0]))

    def mutants_of(self, problem: str) -> list[dict[str, Any]]:
        """The witnessed mutants of one problem, with which protocols miss them."""
        mx = self.matrices[problem]
        return [{**mx.mutants[m], "missed_by": [p.name for p in self.protocols
                                                if m not in self.detected[p.name].get(problem, set())]}
                for m in sorted(self.witnessed.get(problem, set()))]


def overview(store: Any, protocols: list[Protocol]) -> Overview:
    """Score every protocol once; the screens slice the result."""
    matrices = load_matrices(store, floor=min((p.tolerance for p in protocols), default=None))
    results = [run_protocol(p, matrices) for p in protocols]
    return Overview(protocols, {mx.problem.key: mx for mx in matrices}, witnessed(results),
                    {r.protocol: r.detected for r in results},
                    {r.protocol: len(r.false_rejections) for r in results}, store.sample_summary(),
                    {r.protocol: {"checks": r.missing_checks, "cells": r.missing_cells}
                     for r in results if r.missing_checks or r.missing_cells})


def mutant_detail(store: Any, mutant_id: str, protocols: list[Protocol]) -> dict[str, Any]:
    """One mutant: its record, its rule, its diff, and every input it met with the verdict of each
    protocol that uses that input — so a miss shows as a blind band, an invalid input or an input
    the protocol never runs."""
    row = store.mutant(mutant_id)
    rule = store.rules().get(row["rule"], {})
    inputs = []
    for r in store.mutant_cells(mutant_id, row["substrate_hash"]):
        spec = json.loads(r["spec"])
        verdicts = {}
        for p in protocols:
            used = any(s.id == r["input"] for s in _specs(p, store, spec["problem"]))
            if not used:
                verdicts[p.name] = "not in protocol"
            elif not valid_at({"valid": r["valid"], "margin": r["correct_margin"]}, p.tolerance):
                verdicts[p.name] = "invalid input"
            else:
                verdicts[p.name] = "kills" if killed((r["outcome"], r["margin"]), p.tolerance) else \
                    f"blind (margin {r['margin']:.1e} <= {p.tolerance:g})"
        inputs.append({**r, "verdicts": verdicts})
    return {"mutant": row, "rule": rule, "inputs": inputs}


_SPEC_CACHE: dict[tuple[str, str], list[Any]] = {}


def _specs(protocol: Protocol, store: Any, problem: str) -> list[Any]:
    key = (protocol.name, problem)
    if key not in _SPEC_CACHE:
        try:
            _SPEC_CACHE[key] = protocol.specs(problem_from_row(problem, store.problem_rows().get(problem, {})))
        except KbmError:  # a hook that needs the problem file: it uses none of the stored inputs here
            _SPEC_CACHE[key] = []
    return _SPEC_CACHE[key]
