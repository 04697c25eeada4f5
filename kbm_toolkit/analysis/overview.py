"""What the terminal UI shows, computed from the store alone (no Textual, no CUDA): the library
side of `kbm tui`, so the app only lays out what these functions return."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.problem import problem_from_row
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import FAMILIES, Accounting
from kbm_toolkit.analysis.matrix import Matrix, killed, load_matrices, valid_at
from kbm_toolkit.analysis.score import denominator_words, open_witnesses, scored, unrefereeable


@dataclass
class Overview:
    """Everything the overview, patterns and problems screens need, computed once."""

    protocols: list[Protocol]
    matrices: dict[str, Matrix]
    denominators: dict[str, dict[str, set[str]]]
    """protocol → problem → the mutants its score is over: its `kbm audit` denominator (the other
    protocols' witnesses under `accounting`, its unrefereeable problems left out)."""
    detected: dict[str, dict[str, set[str]]]
    """protocol → problem → detected mutants."""
    accounting: Accounting = Accounting.TOLERANCE
    denominator: list[str] = field(default_factory=list)
    """The protocols whose witnesses define every denominator (default: `protocols`)."""
    excluded: dict[str, dict[str, str]] = field(default_factory=dict)
    """protocol → problem → why it cannot referee it; only the protocols that leave some out."""
    false_rejections: dict[str, int] = field(default_factory=dict)
    sample: dict[str, Any] | None = None
    """The store's sample (`Store.sample_summary`), None when every mutant is evaluated."""
    missing: dict[str, dict[str, Any]] = field(default_factory=dict)
    """protocol → what its figures lack: {"checks": problem → input ids never checked, "cells":
    problem → cells not evaluated}; only the protocols that lack some."""
    open_search: dict[str, dict[str, Any]] = field(default_factory=dict)
    """protocol → its audit's `witness_search_open` (mutants outside its denominator that a
    denominator protocol has not run on yet); only the protocols where there are some."""

    @cached_property  # the denominators never change once scored; the screens ask on every key press
    def witnessed(self) -> dict[str, set[str]]:
        """Per problem, the mutants some protocol's score is over (the patterns and mutant lists)."""
        out: dict[str, set[str]] = {}
        for den in self.denominators.values():
            for key, ids in den.items():
                out.setdefault(key, set()).update(ids)
        return out

    @property
    def total(self) -> int:
        return sum(len(w) for w in self.witnessed.values())

    def score(self, protocol: str) -> tuple[int, int]:
        """(witnessed, missed) of one protocol over its own denominator: `kbm audit`'s figures."""
        den, found = self.denominators[protocol], self.detected[protocol]
        n = sum(len(w) for w in den.values())
        return n, n - sum(len(w & found.get(k, set())) for k, w in den.items())

    def score_words(self, protocol: str) -> str:
        """`kernelbench misses 6.7% of 16,223 mutants witnessed at 0.01 by any of …`: the score
        with its denominator's size and definition, as `kbm audit` prints it."""
        p = next(p for p in self.protocols if p.name == protocol)
        n, missed = self.score(protocol)
        names = sorted({*(self.denominator or [x.name for x in self.protocols]), protocol})  # as the audit names them
        words = denominator_words(names, n, p.judge.atol, self.accounting)
        return f"{protocol} misses {100.0 * missed / n:.1f}% of {words}" if n else f"{protocol}: no {words}"

    def family_table(self) -> list[tuple[str, list[tuple[int, float | None]]]]:
        """(family, (witnessed, missed %) per protocol over its own denominator), families in
        taxonomy order, then `all`."""
        family_of = {m: mx.mutants[m]["family"] for mx in self.matrices.values() for m in mx.mutants}
        rows = []
        for family in [*FAMILIES, "all"]:
            cells = []
            for p in self.protocols:
                ids = {(k, m) for k, w in self.denominators[p.name].items() for m in w
                       if family in ("all", family_of[m])}
                missed = sum(m not in self.detected[p.name].get(k, set()) for k, m in ids)
                cells.append((len(ids), 100.0 * missed / len(ids) if ids else None))
            if any(n for n, _ in cells):
                rows.append((family, cells))
        return rows

    def _missed(self, protocol: str, problem: str, mutant: str) -> bool | None:
        """Whether `protocol` misses the mutant; None when its score is not over it (no witness at its tolerance)."""
        if mutant not in self.denominators[protocol].get(problem, set()):
            return None
        return mutant not in self.detected[protocol].get(problem, set())

    def patterns(self) -> list[tuple[tuple[bool | None, ...], list[str]]]:
        """Distinct "which protocols miss this mutant" patterns over the mutants some protocol's
        score is over (None: not in that protocol's denominator), most common first (the UpSet view)."""
        groups: dict[tuple[bool | None, ...], list[str]] = {}
        for k, w in self.witnessed.items():
            for m in sorted(w):
                key = tuple(self._missed(p.name, k, m) for p in self.protocols)
                groups.setdefault(key, []).append(m)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), [2 if x is None else int(x) for x in kv[0]]))

    def problems(self, protocol: str, level: str | None = None, family: str | None = None) -> list[tuple[str, int, int]]:
        """(problem, witnessed, missed by `protocol`) over its denominator, highest miss rate first; filterable."""
        rows = []
        for k, w in self.denominators[protocol].items():
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
        return [{**mx.mutants[m], "missed_by": [p.name for p in self.protocols if self._missed(p.name, problem, m)]}
                for m in sorted(self.witnessed.get(problem, set()))]


def overview(store: Any, protocols: list[Protocol], accounting: Accounting = Accounting.TOLERANCE,
             denominator: list[Protocol] | None = None) -> Overview:
    """Score every protocol once, as `kbm audit` scores it (the same denominator, by default
    `protocols`, and the same problems left out); the screens slice the result."""
    denominator = denominator or protocols
    matrices = load_matrices(store, floor=min((p.tolerance for p in [*protocols, *denominator]), default=None))
    references = store.reference_checks()
    denominators, detected, excluded, results, open_search = {}, {}, {}, [], {}
    for p in protocols:
        left_out = unrefereeable(p, matrices, references)
        kept = [mx for mx in matrices if mx.problem.key not in left_out]
        mine, base, wit = scored(p, kept, denominator, accounting=accounting)
        denominators[p.name], detected[p.name] = wit, mine.detected
        results.append(mine)
        found = open_witnesses(base + [mine], kept, wit)
        if found["mutants"]:
            open_search[p.name] = found
        if left_out:
            excluded[p.name] = left_out
    names = sorted(p.name for p in denominator)
    return Overview(protocols, {mx.problem.key: mx for mx in matrices}, denominators, detected, accounting, names,
                    excluded,
                    {r.protocol: len(r.false_rejections) for r in results}, store.sample_summary(),
                    {r.protocol: {"checks": r.missing_checks, "cells": r.missing_cells}
                     for r in results if r.missing_checks or r.missing_cells}, open_search)


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
