"""Standard exports of the store: the mutation-testing-elements report (Stryker's JSON, schema
version 2), so the existing mutation-testing HTML viewer shows kbm's results per substrate file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbm_toolkit import __version__
from kbm_toolkit.analysis.matrix import Matrix, killed, load_matrices, valid_at
from kbm_toolkit.analysis.score import denominator_words, open_witnesses, scored, unrefereeable
from kbm_toolkit.outputs import output_file
from kbm_toolkit.report.audit import missing_words
from kbm_toolkit.problems.pack import locate_substrate
from kbm_toolkit.problems.problem import problem_from_row
from kbm_toolkit.problems.substrate import FILES, Substrate, has_substrate, substrate_for
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import Accounting, MutantStatus

SCREENING_STATUS = {MutantStatus.COMPILE_ERROR: "CompileError", MutantStatus.QUARANTINED: "RuntimeError",
                    MutantStatus.EQUIVALENT: "Ignored", MutantStatus.DUPLICATE: "Ignored"}


def _end(text: str, line: int, col: int) -> dict[str, int]:
    """The position just after `text` when it starts at (line, col), 1-based."""
    lines = text.split("\n")
    if len(lines) == 1:
        return {"line": line, "column": col + len(text)}
    return {"line": line + len(lines) - 1, "column": len(lines[-1]) + 1}


def stryker_report(store: Any, protocol: Protocol, denominator: list[Protocol],
                   accounting: Accounting = Accounting.TOLERANCE) -> dict[str, Any]:
    """The report for `protocol`: Killed (witnessed and detected), Survived (witnessed, missed),
    Ignored (equivalent, duplicate, unwitnessed, or of a problem the protocol cannot referee),
    CompileError, RuntimeError (quarantined on the probe), Pending (not evaluated yet): so the
    viewer's score, killed / (killed + survived), is `kbm audit`'s detection. Problems come from
    the store and substrates from kbm (a pack's from its pack), so no KernelBench checkout is
    needed; mutants of a substrate that has changed since, or that kbm does not ship, are left out."""
    mx_list = load_matrices(store)  # every cell: a mutant with none loaded would read as not evaluated
    matrices = {mx.problem.key: mx for mx in mx_list}
    excluded = unrefereeable(protocol, mx_list, store.reference_checks())
    kept = [mx for mx in mx_list if mx.problem.key not in excluded]
    mine, base, wit = scored(protocol, kept, denominator, accounting=accounting)
    n = sum(len(w) for w in wit.values())
    names = sorted({p.name for p in [*denominator, protocol]})
    rules = store.rules()
    files: dict[str, Any] = {}
    problems = store.problem_rows()
    for key in store.problems_with_mutants():
        problem = locate_substrate(problem_from_row(key, problems.get(key, {})))  # a pack's, in its pack
        if not has_substrate(problem):
            continue
        substrate: Substrate = substrate_for(problem)
        current = substrate.content_hash
        texts = {"kernel": substrate.source, "launcher": substrate.launcher_source}
        mx = matrices.get(key)
        for row in (r for r in store.mutants(key) if r["substrate_hash"] == current):  # in source order
            target = row["target"]
            entry = files.setdefault(f"{key}/{FILES[target]}", {
                "language": "cpp" if target == "kernel" else "python", "source": texts[target], "mutants": []})
            status, reason, killers = _status(row, mx, protocol, wit.get(key, set()), mine.detected.get(key, set()),
                                              excluded.get(key))
            mutant = {"id": row["id"], "mutatorName": row["rule"], "replacement": row["replacement"],
                      "description": rules.get(row["rule"], {}).get("description", row["rule"]),
                      "location": {"start": {"line": row["line"], "column": row["col"]},
                                   "end": _end(row["original"], row["line"], row["col"])},
                      "status": status}
            if reason:
                mutant["statusReason"] = reason
            if killers:
                mutant["killedBy"] = killers
            entry["mutants"].append(mutant)
    return {"schemaVersion": "2", "thresholds": {"high": 80, "low": 60}, "files": files,
            "framework": {"name": "kbm", "version": __version__},
            "config": {"protocol": protocol.name, "tolerance": protocol.tolerance, "accounting": str(accounting),
                       "denominator": denominator_words(names, n, protocol.judge.atol, accounting),
                       "incomplete": missing_words(mine.missing_checks, mine.missing_cells),
                       "witness_search_open": open_witnesses(base + [mine], kept, wit),
                       "unrefereeable": dict(sorted(excluded.items()))}}


def _status(row: dict[str, Any], mx: Matrix | None, protocol: Protocol, witnessed_here: set[str],
            detected: set[str], unrefereeable_why: str | None = None) -> tuple[str, str, list[str]]:
    if row["status"] in SCREENING_STATUS:
        reason = {"duplicate": f"duplicate of {row['duplicate_of']}", "equivalent": "same cubin as the original",
                  "quarantined": "crashed or hung on the probe input", "compile_error": row["message"] or ""}
        return SCREENING_STATUS[row["status"]], reason[row["status"]], []
    if mx is None or not any(m == row["id"] for m, _ in mx.cells):
        return "Pending", "not evaluated yet (kbm run)", []
    if unrefereeable_why:
        return "Ignored", f"{protocol.name} cannot referee this problem: {unrefereeable_why}", []
    if row["id"] in detected and row["id"] in witnessed_here:
        killers = [s.label for s in protocol.specs(mx.problem)
                   if (row["id"], s.id) in mx.cells and killed(mx.cells[(row["id"], s.id)], protocol.tolerance)
                   and valid_at(mx.checks.get(s.id), protocol.tolerance)]
        return "Killed", "", killers
    if row["id"] in witnessed_here:
        return "Survived", f"witnessed by another protocol, missed by {protocol.name}", []
    if row["id"] in detected:  # against the benchmark's own reference only: not a fault strict fp32 shows
        return "Ignored", f"unwitnessed: {protocol.name} rejects it against its own reference, no valid input " \
                          "kills it against strict fp32", []
    return "Ignored", "unwitnessed: no valid input kills it", []


@dataclass
class Export:
    """What `export` wrote: the report's text, how many mutants in how many files, and how many it left out."""

    text: str
    mutants: int
    files: int
    left_out: int
    """Mutants of a substrate that has changed since, or that kbm does not ship: their diffs would not apply."""


def export(store: Any, protocol: Protocol, denominator: list[Protocol], out: Path | None = None,
           accounting: Accounting = Accounting.TOLERANCE) -> Export:
    """`kbm export`: the Stryker report as JSON, written to `out` when given."""
    report = stryker_report(store, protocol, denominator, accounting)
    text = json.dumps(report, indent=1)
    exported = sum(len(f["mutants"]) for f in report["files"].values())
    if out is not None:
        with output_file(out) as path:
            path.write_text(text)
    return Export(text, exported, len(report["files"]), store.mutant_count() - exported)
