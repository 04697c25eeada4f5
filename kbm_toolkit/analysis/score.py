"""Score protocols against the kill matrix: a query over the store, no GPU, no CUDA import.

Definitions (DESIGN.md, "Scoring"):
- An input of a protocol is *valid* at tolerance t when its reference is usable and finite and
  the correct substrate passes it at t. An input on which the correct substrate fails is a
  *false rejection*; one whose reference raises or is non-finite is dropped by protocols that
  say so (KernelBench-Verified) and is a false rejection otherwise (allclose fails on NaN).
- A protocol *detects* a mutant when one of its valid inputs kills it at the protocol's
  tolerance: the cell's outcome is not `pass`, or its margin exceeds t.
- The denominator of a protocol's score is the *witnessed* mutants: those a valid input of at
  least one protocol of the denominator set (by default every installed protocol and every one the
  store keeps) kills, judged at the scored protocol's tolerance (the paper's accounting,
  `Accounting.TOLERANCE`) or, with `Accounting.UNION`, each denominator protocol at its own.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.analysis.judged import judged
from kbm_toolkit.analysis.matrix import Matrix, load_matrices, valid_at
from kbm_toolkit.analysis.refereeability import flags
from kbm_toolkit.analysis.shape_bound import bound, shape_bound
from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import STRICT, Judging
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import Accounting


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
    kills: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    """Per problem, each valid input's killed mutants (shared with the matrix's cache, not copied)."""
    undecided_mutants: dict[str, set[str]] = field(default_factory=dict)
    """Per problem, the mutants it has not detected whose missing cells could still detect them."""
    out_of_reach: dict[str, set[str]] = field(default_factory=dict)
    """Per problem, the mutants that run the original's machine code at the shape of every one of
    the protocol's inputs (`kbm equivalence`): none of them, checked or not, can detect them."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Problems whose specs could not be built here (e.g. a hook needs the problem file)."""
    judging: Judging | None = None
    """How outputs were judged (the protocol's own, or an --atol/--rtol override)."""
    rejected_as_run: list[dict[str, Any]] = field(default_factory=list)
    """Valid inputs (strict fp32) on which the correct kernel fails against the protocol's own
    reference: false rejections its benchmark makes as it runs."""
    unmeasured_as_run: int = 0
    """Valid inputs with no margin against the protocol's own reference stored."""
    undecided_cells: int = 0
    strict_cells: int = 0
    undecided_checks: int = 0


def run_protocol(protocol: Protocol, matrices: list[Matrix], tolerance: float | None = None,
                 inputs_of: Protocol | None = None, judging: Judging | None = None) -> ProtocolResult:
    """Detected mutants per problem for `protocol` at `tolerance` (atol = rtol; default its own),
    or as `judging` says, judging validity and kills alike. `inputs_of` takes the inputs from
    another protocol (for the decomposition of a gain into inputs and tolerance)."""
    if judging is None:
        judging = protocol.judge if tolerance is None else protocol.judge.with_tolerances(tolerance, tolerance)
    t = judging.atol
    source = inputs_of or protocol
    result = ProtocolResult(protocol.name, t, judging=judging)
    view = None
    if not judging.is_default:  # cells and checks re-judged from their stored margins
        view = judged(matrices, judging)
        matrices = view.matrices
        result.undecided_cells, result.strict_cells = view.undecided_cells, view.strict_cells
        result.undecided_checks = view.undecided_checks
    for mx in matrices:
        key = mx.problem.key
        try:
            specs = source.specs(mx.problem)
        except KbmError as e:
            result.unavailable[key] = e.line()
            continue
        shapes = {spec.shape_key for spec in specs}
        result.out_of_reach[key] = {m for m, found in mx.verdicts.items() if bound(found, shapes) is True}
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
            if check.get("undecided"):  # counted in undecided_checks: neither valid nor a rejection
                continue
            if not valid_at(check, t):
                result.false_rejections.append({"problem": key, "input": spec.id, "label": spec.label,
                                                "margin": check["margin"], "note": check["note"]})
                continue
            valid.append(spec.id)  # validity is strict fp32 whatever reference the benchmark computes
            if view is not None and key in view.as_run:
                _as_run(result, view.as_run[key].get(spec.id), key, spec, check)
        detected: set[str] = set()
        kills = result.kills[key] = {}
        for i in valid:
            kills[i] = mx.killed(i, t)
            detected |= kills[i]
        for i in valid:
            # a detected mutant needs no more cells (a crash stop, --first-kill): none can undo it
            missing = mx.missing(i, detected)
            if missing:
                result.missing_cells[key] = result.missing_cells.get(key, 0) + len(missing)
                result.undecided_mutants.setdefault(key, set()).update(missing)
        result.detected[key] = detected & mx.mutants.keys()
    return result


def _as_run(result: ProtocolResult, passes: bool | None, key: str, spec: Any, check: dict[str, Any]) -> None:
    """Record what the correct kernel does on a valid input against the protocol's own reference."""
    if passes is None:
        result.unmeasured_as_run += 1
    elif not passes:
        margins = json.loads(check.get("margins") or "{}")
        assert result.judging is not None
        result.rejected_as_run.append({"problem": key, "input": spec.id, "label": spec.label,
                                       "margin": margins.get(result.judging.key)})


def witnessed(results: list[ProtocolResult]) -> dict[str, set[str]]:
    """Per problem, the mutants some protocol detects: the denominator."""
    out: dict[str, set[str]] = defaultdict(set)
    for r in results:
        for key, found in r.detected.items():
            out[key] |= found
    return dict(out)


def witness_judging(p: Protocol, scored: Protocol, accounting: Accounting = Accounting.TOLERANCE) -> Judging:
    """How `p`'s inputs witness mutants for `scored`'s score: against the strict fp32 reference (a
    benchmark's own reference changes what it detects, not what is there), at `scored`'s
    tolerances, or at `p`'s own in the union accounting."""
    strict = p.judge.with_reference(STRICT)
    if accounting == Accounting.UNION:
        return strict
    return strict.with_tolerances(scored.judge.atol, scored.judge.rtol)


def accounting_words(accounting: Accounting | str) -> str:
    """The accounting as every output names it: `the paper's accounting` or `the union accounting`."""
    return "the paper's accounting" if Accounting(accounting) == Accounting.TOLERANCE else "the union accounting"


def witness_words(names: list[str], tolerance: float, accounting: Accounting | str) -> str:
    """The denominator's definition: `witnessed at 0.01 by any of fuzz, kbv (the paper's accounting)`."""
    if Accounting(accounting) == Accounting.TOLERANCE:
        return f"witnessed at {tolerance:g} by any of {', '.join(names)} ({accounting_words(accounting)})"
    return f"witnessed by any of {', '.join(names)}, each at its own tolerance ({accounting_words(accounting)})"


def denominator_words(names: list[str], n: int, tolerance: float, accounting: Accounting | str) -> str:
    """The denominator's size and definition in one phrase, as every output that prints a score
    prints it: `17,030 mutants witnessed at 0.01 by any of fuzz, kbv (the paper's accounting)`."""
    return f"{n:,} mutants {witness_words(names, tolerance, accounting)}"


def bootstrap_band(per_problem: list[tuple[int, int]], draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """90% band of the pooled detection rate when problems are resampled with replacement."""
    per_problem = [p for p in per_problem if p[1]]
    if not per_problem:
        return (float("nan"), float("nan"))
    _, low, high = band_by_problems(per_problem, [len(per_problem)], draws, seed)[0]
    return low, high


def scored(protocol: Protocol, matrices: list[Matrix], denominator: list[Protocol], tolerance: float | None = None,
           judging: Judging | None = None, accounting: Accounting = Accounting.TOLERANCE
           ) -> tuple[ProtocolResult, list[ProtocolResult], dict[str, set[str]]]:
    """A protocol's score as sets: what it detects (at `tolerance` or as `judging` says), the
    witness runs of the other `denominator` protocols, and per problem the mutants the score is
    over. Every view that prints a score takes both sides from here."""
    base = [run_protocol(p, matrices, judging=witness_judging(p, protocol, accounting)) for p in denominator
            if p.name != protocol.name]
    mine = run_protocol(protocol, matrices, tolerance, judging=judging)
    strict_own = witness_judging(protocol, protocol, accounting)
    own = mine if mine.judging == strict_own else run_protocol(protocol, matrices, judging=strict_own)
    return mine, base, witnessed(base + [own])


def band_by_problems(per_problem: list[tuple[int, int]], sizes: list[int], draws: int = 1000,
                     seed: int = 0) -> list[tuple[int, float, float]]:
    """(k, low, high): the 90% band of the pooled rate over k problems drawn with replacement from
    `per_problem` ((hits, total) each), for each k in `sizes` (the paper's Fig. 3b: how wide a
    benchmark of k problems would measure it)."""
    per_problem = [p for p in per_problem if p[1]]
    rng = random.Random(seed)
    out = []
    for k in sizes:
        rates = []
        for _ in range(draws):
            sample = [per_problem[rng.randrange(len(per_problem))] for _ in range(k)]
            rates.append(sum(d for d, _ in sample) / sum(n for _, n in sample))
        rates.sort()
        out.append((k, rates[int(0.05 * draws)], rates[int(0.95 * draws) - 1]))
    return out


def audit(protocol: Protocol, matrices: list[Matrix], denominator: list[Protocol],
          tolerance: float | None = None, vs: Protocol | None = None,
          excluded: dict[str, str] | None = None, vs_excluded: dict[str, str] | None = None,
          judging: Judging | None = None, accounting: Accounting = Accounting.TOLERANCE) -> dict[str, Any]:
    """The audit of `protocol`: detection of witnessed mutants, with its structure.

    Problems in `excluded` (problem -> why the protocol cannot referee it) are left out of every
    figure and listed in the report. The survivors of `vs` are the mutants the `denominator`
    witnesses and `vs` misses, counted only where `vs` can referee (`vs_excluded` lists where it
    cannot): the knowledge-ladder figure is over the same survivors as `vs`'s own audit, and new
    inputs outside the denominator cannot inflate it with mutants only they witness. Witnesses are
    judged at the protocol's own tolerance (`accounting`), never at a `tolerance` override: the
    gain an override makes is measured on the same denominator. Where the matrices hold `kbm
    equivalence`'s verdicts, the misses shape-bound at the protocol's inputs are counted.
    """
    excluded = excluded or {}
    matrices = [mx for mx in matrices if mx.problem.key not in excluded]
    mine, base, wit = scored(protocol, matrices, denominator, tolerance, judging, accounting)
    n = sum(len(w) for w in wit.values())
    d = sum(len(mine.detected.get(k, set()) & w) for k, w in wit.items())
    names = sorted({p.name for p in denominator} | {protocol.name})
    report: dict[str, Any] = {
        "protocol": protocol.name, "description": protocol.description, "note": protocol.note,
        "tolerance": mine.tolerance,
        "denominator": names, "accounting": str(accounting),
        "witnessed_as": witness_words(names, protocol.judge.atol, accounting),
        "denominator_words": denominator_words(names, n, protocol.judge.atol, accounting),
        "witnessed": n, "detected": d, "missed": n - d, "detection_pct": 100.0 * d / n if n else None,
        **_misses(wit, mine, {mx.problem.key: mx for mx in matrices}),
        "judging": mine.judging.words() if mine.judging else None,
        "false_rejections": mine.false_rejections, "dropped_inputs": mine.dropped,
        "as_run": _as_run_summary(protocol, mine),
        "undecided": {"cells": mine.undecided_cells, "checks": mine.undecided_checks},
        "missing": {"checks": mine.missing_checks, "cells": mine.missing_cells},
        "unavailable": {p.protocol: p.unavailable for p in base + [mine] if p.unavailable},
        "excluded": dict(sorted(excluded.items())),
        "witness_search_open": open_witnesses(base + [mine], matrices, wit),
        "shape_bound": shape_bound({k: w - mine.detected.get(k, set()) for k, w in wit.items()}, matrices,
                                   {k: mine.kills.get(k, {}).keys() for k in wit}),
    }
    if vs is not None:
        # survivors the denominator fixes: a protocol outside it cannot add survivors of its own
        fixed = wit if protocol.name in {p.name for p in denominator} else witnessed(base)
        other = run_protocol(vs, matrices)  # once, for the split and the ladder
        report["vs"] = _versus(protocol, vs, matrices, wit, mine, fixed, vs_excluded or {}, other)
        fuzz = next((p for p in denominator if p.name == LADDER_BASELINE), None)
        if fuzz is not None and LADDER_BASELINE not in (protocol.name, vs.name):
            report["vs"]["ladder"] = _ladder(protocol, matrices, mine, base, run_protocol(fuzz, matrices),
                                             other, vs_excluded or {})
    return report


def open_witnesses(results: list[ProtocolResult], matrices: list[Matrix], wit: dict[str, set[str]]) -> dict[str, Any]:
    """The mutants no denominator protocol witnesses that one still could, from cells it lacks or
    inputs it never checked (not those `kbm equivalence` proved out of its reach): a denominator
    short of them may grow. {"mutants": N, "by": {protocol: n}}."""
    unwitnessed = {mx.problem.key: mx.mutants.keys() - wit.get(mx.problem.key, set()) for mx in matrices}
    every: set[tuple[str, str]] = set()
    by: dict[str, int] = {}
    for r in results:
        mine: set[tuple[str, str]] = set()
        for key, left in unwitnessed.items():
            could = left if r.missing_checks.get(key) else r.undecided_mutants.get(key, set()) & left
            mine |= {(key, m) for m in could - r.out_of_reach.get(key, set())}
        if mine:
            by[r.protocol] = len(mine)
            every |= mine
    return {"mutants": len(every), "by": dict(sorted(by.items()))}


def _as_run_summary(protocol: Protocol, mine: ProtocolResult) -> dict[str, Any] | None:
    """The false rejections the protocol's benchmark makes with its own reference, by problem;
    None for a protocol judged against strict fp32, whose false rejections are all in the audit's."""
    if mine.judging is None or mine.judging.reference == STRICT:
        return None
    problems: dict[str, dict[str, Any]] = {}
    for r in mine.rejected_as_run:
        p = problems.setdefault(r["problem"], {"inputs": 0, "worst_margin": 0.0})
        p["inputs"] += 1
        p["worst_margin"] = max(p["worst_margin"], r["margin"] if r["margin"] is not None else float("inf"))
    return {"reference": mine.judging.reference, "problems": dict(sorted(problems.items())),
            "inputs": len(mine.rejected_as_run), "unmeasured_inputs": mine.unmeasured_as_run,
            "cells_judged_strict": mine.strict_cells}


def _misses(wit: dict[str, set[str]], mine: ProtocolResult, by_key: dict[str, Matrix]) -> dict[str, Any]:
    """Where the protocol's misses live: the band over problems, by family, the worst problems and rules."""
    families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    rules: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    problems = []
    missed_families: dict[str, Counter] = defaultdict(Counter)
    for key, w in wit.items():
        found = mine.detected.get(key, set())
        for m in w:
            row = by_key[key].mutants[m]
            for bucket in (families[row["family"]], rules[row["rule"]]):
                bucket[0] += 1
                bucket[1] += m not in found
            if m not in found:
                missed_families[key][row["family"]] += 1
        problems.append((key, len(w & found), len(w)))
    return {
        "band90_pct": [100.0 * x for x in bootstrap_band([(dd, nn) for _, dd, nn in problems])],
        "families": {f: {"witnessed": w, "missed": m, "missed_pct": 100.0 * m / w,
                         "rules": len({by_key[k].mutants[m]["rule"] for k, ws in wit.items() for m in ws
                                       if by_key[k].mutants[m]["family"] == f})}
                     for f, (w, m) in sorted(families.items())},
        "worst_problems": [{"problem": k, "witnessed": nn, "missed": nn - dd, "missed_pct": 100.0 * (nn - dd) / nn}
                           for k, dd, nn in sorted(problems, key=lambda p: (-(p[2] - p[1]) / max(p[2], 1), p[0]))
                           if nn][:10],
        "most_missed_problems": [{"problem": k, "witnessed": nn, "missed": nn - dd, "missed_pct": 100.0 * (nn - dd) / nn,
                                  "families": dict(sorted(missed_families[k].items(), key=lambda fn: (-fn[1], fn[0])))}
                                 for k, dd, nn in sorted(problems, key=lambda p: (-(p[2] - p[1]), p[0])) if nn > dd][:10],
        "worst_rules": [{"rule": r, "witnessed": w, "missed": m, "missed_pct": 100.0 * m / w}
                        for r, (w, m) in sorted(rules.items(), key=lambda kv: (-kv[1][1], kv[0]))][:10],
    }


def _versus(protocol: Protocol, vs: Protocol, matrices: list[Matrix], wit: dict[str, set[str]], mine: ProtocolResult,
            fixed: dict[str, set[str]], vs_excluded: dict[str, str], other: ProtocolResult) -> dict[str, Any]:
    """The gain over `vs` split into inputs, reference and tolerance, and the knowledge-ladder
    figure: how many of the mutants `vs` lets through (of the `fixed` witnessed ones) this
    protocol kills.

    The split walks from `vs` to this protocol one change at a time: its inputs (judged as `vs`
    judges), then its reference environment (None when both use the same), then its tolerance and
    comparison. `other` is `vs` run on `matrices`."""
    n = sum(len(w) for w in wit.values())
    mixed = run_protocol(vs, matrices, inputs_of=protocol)
    own_reference = mine.judging.reference if mine.judging else protocol.judge.reference
    same_reference = own_reference == vs.judge.reference
    referenced = mixed if same_reference else \
        run_protocol(vs, matrices, inputs_of=protocol, judging=vs.judge.with_reference(own_reference))

    def pct(r: ProtocolResult) -> float:
        return 100.0 * sum(len(r.detected.get(k, set()) & w) for k, w in wit.items()) / n if n else 0.0

    survivors = {k: w - other.detected.get(k, set()) for k, w in fixed.items() if k not in vs_excluded}
    n_survivors = sum(len(s) for s in survivors.values())
    killed = sum(len(s & mine.detected.get(k, set())) for k, s in survivors.items())
    return {"protocol": vs.name, "detection_pct": pct(other), "gain_points": pct(mine) - pct(other),
            "inputs_points": pct(mixed) - pct(other),
            "reference_points": None if same_reference else pct(referenced) - pct(mixed),
            "tolerance_points": pct(mine) - pct(referenced),
            "survivors": n_survivors, "survivors_killed": killed,
            "survivors_killed_pct": 100.0 * killed / n_survivors if n_survivors else None}


LADDER_BASELINE = "fuzz"
"""The knowledge ladder's first rung, which the paper's random fuzz is: the protocol a generator is
set beside on the same survivors."""


def _ladder(protocol: Protocol, matrices: list[Matrix], mine: ProtocolResult, base: list[ProtocolResult],
            fuzz: ProtocolResult, other: ProtocolResult, vs_excluded: dict[str, str]) -> dict[str, Any]:
    """The knowledge ladder like for like: what `protocol` (a generator's inputs) and fuzz kill of
    the mutants `other` lets through, (1) all of them that both were run on, witnessed or not, as
    the paper's rungs are scored (1,154 official survivors), and (2) those that a valid input of
    neither witnesses (a survivor witnessed by fuzz's own inputs flatters fuzz, as one witnessed by
    the generator's flatters it)."""
    every, by_others = {}, {}
    for mx in matrices:
        key = mx.problem.key
        if key in vs_excluded:
            continue
        theirs = mine.kills.get(key, {}).keys() | fuzz.kills.get(key, {}).keys()
        seen = set().union(*(killed for r in base for i, killed in r.kills.get(key, {}).items() if i not in theirs))
        open_ = mine.undecided_mutants.get(key, set()) | fuzz.undecided_mutants.get(key, set())
        every[key] = set(mx.mutants) - other.detected.get(key, set()) - open_
        by_others[key] = every[key] & seen

    def kills(survivors: dict[str, set[str]]) -> dict[str, Any]:
        n = sum(len(v) for v in survivors.values())
        mine_k = sum(len(v & mine.detected.get(k, set())) for k, v in survivors.items())
        fuzz_k = sum(len(v & fuzz.detected.get(k, set())) for k, v in survivors.items())
        return {"survivors": n, "killed": mine_k, "fuzz_killed": fuzz_k,
                "killed_pct": 100.0 * mine_k / n if n else None, "fuzz_killed_pct": 100.0 * fuzz_k / n if n else None}

    return {"baseline": fuzz.protocol, "all_survivors": kills(every), "witnessed_by_others": kills(by_others)}


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
                sample: float | None = None, judging: Judging | None = None,
                level: str | None = None, accounting: Accounting = Accounting.TOLERANCE) -> dict[str, Any]:
    """`audit` over what a store holds: only the cells that can matter are loaded (unless the
    caller has `matrices` already, loaded with the same `sample`), problems the protocol cannot
    referee (`kbm refcheck`, the vacuity band) are left out, and the store's sample, if any (at
    most `sample`), is reported. With `level`, only that level's problems are audited."""
    standalone = matrices is None  # an audit of its own, which says what it knows of the store's cells
    if matrices is None:
        judged_at = [p.tolerance for p in [protocol, *denominator, *([vs] if vs else [])]] + \
            ([tolerance] if tolerance else []) + ([judging.atol] if judging else [])
        matrices = load_matrices(store, min(judged_at), sample=sample)  # cells passing under every tolerance cannot matter
    if level is not None:
        matrices = [mx for mx in matrices if mx.problem.level == level]
    references = store.reference_checks()
    excluded = unrefereeable(protocol, matrices, references, judging.atol if judging else tolerance)
    vs_excluded = unrefereeable(vs, matrices, references) if vs else None
    report = audit(protocol, matrices, denominator, tolerance, vs, excluded, vs_excluded, judging, accounting)
    report["sample"] = store.sample_summary(sample)
    if standalone:  # a report of many audits (tables, figures) prints none of it: one query saved per protocol
        report["overwrite_suspects"] = sum(len(m) for m in store.overwrite_suspects().values())
    return report


def unrefereeable(protocol: Protocol, matrices: list[Matrix], references: dict[str, dict[str, Any]],
                  tolerance: float | None = None) -> dict[str, str]:
    """Problem -> why `protocol` (at `tolerance`) cannot referee it (`kbm refcheck`, the vacuity
    band): left out of its score in every view. `references` is `Store.reference_checks()`."""
    return flags(protocol, [mx.problem for mx in matrices], references, tolerance,
                 {mx.problem.key: mx.checks for mx in matrices})


def unified_audit(store: Any, protocols: list[Protocol], sample: float | None = None,
                  level: str | None = None) -> dict[str, Any]:
    """`kbm audit --all`: every protocol scored on one denominator (the paper's Fig. 4): the
    mutants some protocol's valid input kills at that protocol's own tolerance, on the problems
    every protocol can referee, so the detections compare directly; with each protocol's false
    rejections on the same problems."""
    matrices = load_matrices(store, min(p.tolerance for p in protocols), sample=sample)
    if level is not None:
        matrices = [mx for mx in matrices if mx.problem.level == level]
    references = store.reference_checks()
    excluded: dict[str, str] = {}
    for p in protocols:
        for key, why in unrefereeable(p, matrices, references).items():
            excluded.setdefault(key, f"{p.name}: {why}")
    kept = [mx for mx in matrices if mx.problem.key not in excluded]
    wit = witnessed([run_protocol(p, kept, judging=witness_judging(p, p, Accounting.UNION)) for p in protocols])
    n = sum(len(w) for w in wit.values())
    rows = []
    for p in protocols:
        r = run_protocol(p, kept)
        per_problem = [(len(w & r.detected.get(k, set())), len(w)) for k, w in wit.items()]
        d = sum(hit for hit, _ in per_problem)
        rows.append({"protocol": p.name, "tolerance": r.tolerance, "detected": d,
                     "detection_pct": 100.0 * d / n if n else None,
                     "band90_pct": [100.0 * x for x in bootstrap_band(per_problem)],
                     "false_rejections": len(r.false_rejections),
                     "missing": {"checks": r.missing_checks, "cells": r.missing_cells}})
    names = sorted(p.name for p in protocols)
    return {"witnessed": n, "problems": sum(1 for w in wit.values() if w), "excluded": dict(sorted(excluded.items())),
            "denominator_words": denominator_words(names, n, 0.0, Accounting.UNION) + ", on the problems every one "
                                 "of them can referee", "protocols": rows, "sample": store.sample_summary(sample)}


def survivors(store: Any, protocol: Protocol, denominator: list[Protocol] | None = None,
              accounting: Accounting = Accounting.TOLERANCE) -> dict[str, set[str]]:
    """Per problem, the scored mutants `protocol` does not detect from what the store holds
    (a problem the protocol cannot build inputs for keeps all of its mutants); with
    `denominator`, only those in its audit's denominator (the knowledge ladder's survivors)."""
    floor = min(p.tolerance for p in [protocol, *(denominator or [])])
    matrices = load_matrices(store, floor)
    if denominator is None:
        result, wit = run_protocol(protocol, matrices), None
    else:
        result, _, wit = scored(protocol, matrices, denominator, accounting=accounting)
    return {mx.problem.key: (set(mx.mutants) if wit is None else wit.get(mx.problem.key, set()))
            - result.detected.get(mx.problem.key, set()) for mx in matrices}

