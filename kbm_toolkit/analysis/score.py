"""Score protocols against the kill matrix: a query over the store, no GPU, no CUDA import.

Definitions (DESIGN.md, "Scoring"):
- An input of a protocol is *valid* at tolerance t when its reference is usable and finite and
  the correct substrate passes it at t. An input on which the correct substrate fails is a
  *false rejection*; one whose reference raises or is non-finite is dropped by protocols that
  say so (KernelBench-Verified) and is a false rejection otherwise (allclose fails on NaN).
- A protocol *detects* a mutant when one of its valid inputs kills it at the protocol's
  tolerance: the cell's outcome is not `pass`, or its margin exceeds t.
- The denominator is the *witnessed* mutants: those detected by at least one protocol of the
  denominator set (by default every installed protocol, each at its own tolerance).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.errors import KbmError
from kbm_toolkit.mutation.mutants import in_sample
from kbm_toolkit.problems.problem import Problem, problem_from_row
from kbm_toolkit.protocols.protocol import Protocol


@dataclass
class Matrix:
    """One problem's slice of the store: its distinct mutants, input checks and cells."""

    problem: Problem
    mutants: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, Any]]
    cells: dict[tuple[str, str], tuple[str, float | None]]
    """(mutant, input) -> (outcome, margin); all of them, or only those that can kill (see load_matrices)."""
    evaluated: dict[str, int] = field(default_factory=dict)
    """Input -> how many of the mutants have a cell on it (passing or not)."""
    present: dict[str, set[str]] = field(default_factory=dict)
    """Input -> the mutants with a cell on it, for inputs some mutant lacks (with quiet cells unloaded,
    `cells` alone cannot tell a gap from a quiet cell)."""
    _columns: dict[str, dict[str, tuple[str, float | None]]] | None = field(default=None, repr=False)
    _killed: dict[tuple[str, float], set[str]] = field(default_factory=dict, repr=False)
    _stopped: set[str] | None = field(default=None, repr=False)

    @property
    def stopped(self) -> set[str]:
        """Mutants with a crash or a timeout: runs stop them there, so their other cells may be absent."""
        if self._stopped is None:
            self._stopped = {m for (m, _), (outcome, _) in self.cells.items() if outcome in ("crash", "timeout")}
        return self._stopped

    def missing(self, input_id: str, excused: set[str]) -> int:
        """Mutants with no cell on the input, leaving out those in `excused` (e.g. already detected,
        so no cell can change their verdict)."""
        if self.evaluated.get(input_id, 0) >= len(self.mutants):
            return 0
        have = self.present.get(input_id, set())
        return sum(1 for m in self.mutants if m not in have and m not in excused)

    def column(self, input_id: str) -> dict[str, tuple[str, float | None]]:
        """The cells of one input, by mutant."""
        if self._columns is None:
            columns: dict[str, dict[str, tuple[str, float | None]]] = defaultdict(dict)
            for (m, i), cell in self.cells.items():
                columns[i][m] = cell
            self._columns = dict(columns)
        return self._columns.get(input_id, {})

    def killed(self, input_id: str, t: float) -> set[str]:
        """Mutants the input kills at tolerance t; once per input and tolerance, as the protocols
        share most inputs."""
        if (input_id, t) not in self._killed:
            self._killed[(input_id, t)] = {m for m, cell in self.column(input_id).items() if _killed(cell, t)}
        return self._killed[(input_id, t)]


def load_matrices(store: Any, floor: float | None = None, full_rows: bool = False,
                  sample: float | None = None) -> list[Matrix]:
    """Every refereeable problem that has distinct mutants, with what the store knows about it.

    A problem evaluated on a sample (`kbm run --sample`) holds only its sampled mutants; with
    `full_rows`, only those evaluated without `--first-kill` (what set cover needs); with
    `sample`, at most that share (samples nest, so a wider store reproduces a narrower one). Four
    queries in all, whatever the number of problems. With `floor`, cells that pass with a
    margin at or under it are left out: they kill at no tolerance >= floor, and on a real pool
    they are most of the cells (scoring protocols needs only the others).
    """
    problems = {r["key"]: r for r in store.db["problems"].rows}
    store.db.conn.create_function("kbm_in_sample", 2, in_sample, deterministic=True)
    # the scored mutants: distinct, of a refereeable problem, and in the problem's sample if it has one
    share = "coalesce(p.full_rows, p.sample)" if full_rows else "p.sample"
    if sample is not None:
        share = f"min(coalesce({share}, 1.0), :sample)"
    scored = ("m.status = 'distinct' and (p.key is null or ((p.refereeable is null or p.refereeable != 0) "
              f"and ({share} is null or kbm_in_sample(m.id, {share}))))")
    args: dict[str, Any] = {"sample": sample}
    mutants: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in store.db.query("select m.id, m.problem, m.substrate_hash, m.rule, m.family, m.name, m.status "
                            f"from mutants m left join problems p on p.key = m.problem where {scored}", args):
        mutants[r["problem"]][r["id"]] = r
    hashes = {k: {m["substrate_hash"] for m in ms.values()} for k, ms in mutants.items()}
    checks: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in store.db.query("select k.*, i.problem, i.label, i.spec from input_checks k join inputs i on i.id = k.input"):
        if r["substrate_hash"] in hashes.get(r["problem"], ()):
            checks[r["problem"]][r["input"]] = r
    # the cells of the scored mutants only: a sampled problem may hold cells outside its sample
    distinct = f"join mutants m on m.id = c.mutant left join problems p on p.key = m.problem where {scored}"
    evaluated: dict[str, dict[str, int]] = defaultdict(dict)
    for input_id, problem, n in store.db.execute(f"select c.input, m.problem, count(*) from cells c {distinct} "
                                                 "group by c.input, m.problem", args):
        evaluated[problem][input_id] = n
    # who has a cell on an input with gaps (a crash stop, --first-kill, an unfinished run): none on a full matrix.
    # Read with the cells in one pass: an `input in (list)` filter let SQLite probe every mutant against every
    # listed input, which on a first-kill pool of 23,000 mutants and 5,000 gappy inputs took 40 s
    gappy = {k: {i for i, n in counts.items() if n < len(mutants[k])} for k, counts in evaluated.items()}
    cells: dict[str, dict[tuple[str, str], tuple[str, float | None]]] = defaultdict(dict)
    present: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for mutant, input_id, outcome, margin, problem in store.db.execute(
            f"select c.mutant, c.input, c.outcome, c.margin, m.problem from cells c {distinct}", args):
        if input_id in gappy[problem]:
            present[problem][input_id].add(mutant)
        if floor is None or not (outcome == "pass" and margin is not None and margin <= floor):
            cells[problem][(mutant, input_id)] = (outcome, margin)
    return [Matrix(problem_from_row(k, problems.get(k, {})), mutants[k], checks[k], cells[k], evaluated[k],
                   dict(present[k])) for k in sorted(mutants)]


@dataclass
class ProtocolResult:
    """What one protocol does on every problem, at one tolerance."""

    protocol: str
    tolerance: float
    detected: dict[str, set[str]] = field(default_factory=dict)
    false_rejections: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0
    missing_checks: dict[str, list[str]] = field(default_factory=dict)
    missing_cells: dict[str, int] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    """Problems whose specs could not be built here (e.g. a hook needs the problem file)."""


def valid_at(check: dict[str, Any] | None, t: float) -> bool:
    """Whether an input check says the input is valid at tolerance `t` (the correct kernel passes)."""
    return bool(check and check["valid"] and check["margin"] is not None and check["margin"] <= t)


def _killed(cell: tuple[str, float | None], t: float) -> bool:
    outcome, margin = cell
    return outcome != "pass" or margin is None or margin > t


def run_protocol(protocol: Protocol, matrices: list[Matrix], tolerance: float | None = None,
                 inputs_of: Protocol | None = None) -> ProtocolResult:
    """Detected mutants per problem for `protocol` at `tolerance` (default its own), judging
    validity and kills at that tolerance. `inputs_of` takes the inputs from another protocol
    (for the decomposition of a gain into inputs and tolerance)."""
    t = protocol.tolerance if tolerance is None else tolerance
    source = inputs_of or protocol
    result = ProtocolResult(protocol.name, t)
    for mx in matrices:
        key = mx.problem.key
        try:
            specs = source.specs(mx.problem)
        except KbmError as e:
            result.unavailable[key] = e.line()
            continue
        valid = []
        for spec in specs:
            check = mx.checks.get(spec.id)
            if check is None:
                result.missing_checks.setdefault(key, []).append(spec.id)
                continue
            reference_bad = not check["valid"] and check["outcome"] is None
            if reference_bad and source.drop_nonfinite_reference:
                result.dropped += 1
                continue
            if not valid_at(check, t):
                result.false_rejections.append({"problem": key, "input": spec.id, "label": spec.label,
                                                "margin": check["margin"], "note": check["note"]})
                continue
            valid.append(spec.id)
        detected: set[str] = set()
        for i in valid:
            detected |= mx.killed(i, t)
        for i in valid:
            # a detected mutant needs no more cells (a crash stop, --first-kill): none can undo it
            missing = mx.missing(i, detected)
            if missing:
                result.missing_cells[key] = result.missing_cells.get(key, 0) + missing
        result.detected[key] = detected & mx.mutants.keys()
    return result


def witnessed(results: list[ProtocolResult]) -> dict[str, set[str]]:
    """Per problem, the mutants some protocol detects: the denominator."""
    out: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for key, found in r.detected.items():
            out[key] |= found
    return dict(out)


def bootstrap_band(per_problem: list[tuple[int, int]], draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """90% band of the pooled detection rate when problems are resampled with replacement."""
    per_problem = [p for p in per_problem if p[1]]
    if not per_problem:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    rates = []
    for _ in range(draws):
        sample = [per_problem[rng.randrange(len(per_problem))] for _ in per_problem]
        rates.append(sum(d for d, _ in sample) / sum(n for _, n in sample))
    rates.sort()
    return rates[int(0.05 * draws)], rates[int(0.95 * draws) - 1]


def audit(protocol: Protocol, matrices: list[Matrix], denominator: list[Protocol],
          tolerance: float | None = None, vs: Protocol | None = None,
          excluded: dict[str, str] | None = None, vs_excluded: dict[str, str] | None = None) -> dict[str, Any]:
    """The audit of `protocol`: detection of witnessed mutants, with its structure.

    Problems in `excluded` (problem -> why the protocol cannot referee it) are left out of every
    figure and listed in the report. The survivors of `vs` are the mutants the `denominator`
    witnesses and `vs` misses, counted only where `vs` can referee (`vs_excluded` lists where it
    cannot): the knowledge-ladder figure is over the same survivors as `vs`'s own audit, and new
    inputs outside the denominator cannot inflate it with mutants only they witness.
    """
    excluded = excluded or {}
    matrices = [mx for mx in matrices if mx.problem.key not in excluded]
    base = [run_protocol(p, matrices) for p in denominator if p.name != protocol.name]
    mine = run_protocol(protocol, matrices, tolerance)
    own = mine if tolerance is None else run_protocol(protocol, matrices)
    wit = witnessed(base + [own])  # the denominator never depends on a --tolerance override
    by_key = {mx.problem.key: mx for mx in matrices}
    n = sum(len(w) for w in wit.values())
    d = sum(len(mine.detected.get(k, set()) & w) for k, w in wit.items())
    families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    rules: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    problems = []
    for key, w in wit.items():
        found = mine.detected.get(key, set())
        for m in w:
            row = by_key[key].mutants[m]
            for bucket in (families[row["family"]], rules[row["rule"]]):
                bucket[0] += 1
                bucket[1] += m not in found
        problems.append((key, len(w & found), len(w)))
    report: dict[str, Any] = {
        "protocol": protocol.name, "description": protocol.description, "tolerance": mine.tolerance,
        "denominator": sorted({p.name for p in denominator} | {protocol.name}),
        "witnessed": n, "detected": d, "missed": n - d,
        "detection_pct": 100.0 * d / n if n else None,
        "band90_pct": [100.0 * x for x in bootstrap_band([(dd, nn) for _, dd, nn in problems])],
        "families": {f: {"witnessed": w, "missed": m, "missed_pct": 100.0 * m / w,
                         "rules": len({by_key[k].mutants[m]["rule"] for k, ws in wit.items() for m in ws
                                       if by_key[k].mutants[m]["family"] == f})}
                     for f, (w, m) in sorted(families.items())},
        "worst_problems": [{"problem": k, "witnessed": nn, "missed": nn - dd, "missed_pct": 100.0 * (nn - dd) / nn}
                           for k, dd, nn in sorted(problems, key=lambda p: (-(p[2] - p[1]) / max(p[2], 1), p[0]))
                           if nn][:10],
        "worst_rules": [{"rule": r, "witnessed": w, "missed": m, "missed_pct": 100.0 * m / w}
                        for r, (w, m) in sorted(rules.items(), key=lambda kv: (-kv[1][1], kv[0]))][:10],
        "false_rejections": mine.false_rejections, "dropped_inputs": mine.dropped,
        "missing": {"checks": mine.missing_checks, "cells": mine.missing_cells},
        "unavailable": {p.protocol: p.unavailable for p in base + [mine] if p.unavailable},
        "excluded": dict(sorted(excluded.items())),
    }
    if vs is not None:
        other = run_protocol(vs, matrices)
        mixed = run_protocol(vs, matrices, tolerance=vs.tolerance, inputs_of=protocol)
        def pct(r: ProtocolResult) -> float:
            return 100.0 * sum(len(r.detected.get(k, set()) & w) for k, w in wit.items()) / n if n else 0.0
        # the knowledge-ladder figure: how many of the mutants `vs` lets through this protocol kills,
        # over survivors the denominator fixes (a protocol outside it cannot add survivors of its own)
        fixed = wit if protocol.name in {p.name for p in denominator} else witnessed(base)
        survivors = {k: w - other.detected.get(k, set()) for k, w in fixed.items() if k not in (vs_excluded or {})}
        n_survivors = sum(len(s) for s in survivors.values())
        killed = sum(len(s & mine.detected.get(k, set())) for k, s in survivors.items())
        report["vs"] = {"protocol": vs.name, "detection_pct": pct(other),
                        "gain_points": pct(mine) - pct(other),
                        "inputs_points": pct(mixed) - pct(other), "tolerance_points": pct(mine) - pct(mixed),
                        "survivors": n_survivors, "survivors_killed": killed,
                        "survivors_killed_pct": 100.0 * killed / n_survivors if n_survivors else None}
    return report


def to_json(report: dict[str, Any]) -> str:
    """The report as JSON (NaN becomes null)."""
    def clean(x: Any) -> Any:
        if isinstance(x, float) and x != x:
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    return json.dumps(clean(report), indent=1, sort_keys=True)


def audit_store(store: Any, protocol: Protocol, denominator: list[Protocol], tolerance: float | None = None,
                vs: Protocol | None = None, matrices: list[Matrix] | None = None,
                sample: float | None = None) -> dict[str, Any]:
    """`audit` over what a store holds: only the cells that can matter are loaded (unless the
    caller has `matrices` already, loaded with the same `sample`), problems the protocol cannot
    referee (`kbm refcheck`, the vacuity band) are left out, and the store's sample, if any (at
    most `sample`), is reported."""
    from kbm_toolkit.evaluation.reference_check import flags

    if matrices is None:
        judged = [p.tolerance for p in [protocol, *denominator, *([vs] if vs else [])]] + ([tolerance] if tolerance else [])
        matrices = load_matrices(store, min(judged), sample=sample)  # cells passing under every tolerance cannot matter
    references = store.reference_checks()
    excluded = flags(protocol, matrices, references, tolerance)
    vs_excluded = flags(vs, matrices, references) if vs else None
    report = audit(protocol, matrices, denominator, tolerance, vs, excluded, vs_excluded)
    report["sample"] = store.sample_summary(sample)
    return report


def survivors(store: Any, protocol: Protocol, denominator: list[Protocol] | None = None) -> dict[str, set[str]]:
    """Per problem, the scored mutants `protocol` does not detect from what the store holds
    (a problem the protocol cannot build inputs for keeps all of its mutants); with
    `denominator`, only those some of its protocols detect (the knowledge ladder's survivors)."""
    floor = min(p.tolerance for p in [protocol, *(denominator or [])])
    matrices = load_matrices(store, floor)
    result = run_protocol(protocol, matrices)
    wit = witnessed([run_protocol(p, matrices) for p in denominator]) if denominator is not None else None
    return {mx.problem.key: (set(mx.mutants) if wit is None else wit.get(mx.problem.key, set()))
            - result.detected.get(mx.problem.key, set()) for mx in matrices}

