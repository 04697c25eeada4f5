"""The store's schema: ordered migrations, each applied once in a transaction with its record.

A migration is history: it never calls code outside this module, so what it did to a store
cannot change when kbm's own formulas do (m005 keeps its own copy of the mutant-id formula).
"""

from __future__ import annotations

import hashlib
from typing import Callable

import sqlite_utils

MIGRATIONS: list[tuple[str, Callable[[sqlite_utils.Database], None]]] = []


def migration(fn: Callable[[sqlite_utils.Database], None]) -> Callable[[sqlite_utils.Database], None]:
    """Register a schema migration; they apply in registration order, each exactly once."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_foundation(db: sqlite_utils.Database) -> None:
    db["runs"].create({
        "id": int, "kind": str, "started": str, "finished": str, "kbm": str, "host": str,
        "gpu": str, "arch": str, "driver": str, "torch": str, "cuda_core": str, "nvrtc": str,
        "environment": str,
    }, pk="id")
    db["problems"].create({
        "key": str, "level": str, "number": int, "name": str, "origin": str, "path": str,
        "source_hash": str, "refereeable": int, "reason": str,
    }, pk="key")
    db["substrates"].create({
        "problem": str, "source_hash": str, "image_hash": str, "arch": str, "kernels": str,
        "compile_ms": float, "compiled": str, "gate_status": str, "gate_tolerance": float,
        "gate_worst_margin": float, "gate_run": int, "gate_message": str,
    }, pk="problem", foreign_keys=[("problem", "problems", "key"), ("gate_run", "runs", "id")])
    db["gate_inputs"].create({
        "problem": str, "run": int, "position": int, "label": str, "spec_id": str, "spec": str,
        "outcome": str, "margin": float, "max_abs": float, "ref_ms": float, "kernel_ms": float,
        "note": str,
    }, pk=("problem", "run", "position"),
        foreign_keys=[("problem", "problems", "key"), ("run", "runs", "id")])


@migration
def m002_mutants(db: sqlite_utils.Database) -> None:
    db["rules"].create({"name": str, "family": str, "description": str, "target": str, "origin": str,
                        "file": str}, pk="name")
    db["mutants"].create({
        "id": str, "problem": str, "substrate_hash": str, "rule": str, "family": str, "target": str,
        "line": int, "col": int, "start": int, "end": int, "original": str, "replacement": str,
        "name": str, "source_hash": str, "image_hash": str, "status": str, "duplicate_of": str,
        "compile_ms": float, "message": str, "diff": str, "arch": str, "created": str,
    }, pk="id", foreign_keys=[("problem", "problems", "key"), ("rule", "rules", "name")])
    for columns in (["problem"], ["rule"], ["family"], ["status"]):
        db["mutants"].create_index(columns)


@migration
def m003_evaluation(db: sqlite_utils.Database) -> None:
    db["inputs"].create({"id": str, "problem": str, "spec": str, "label": str, "source": str, "created": str},
                        pk="id", foreign_keys=[("problem", "problems", "key")])
    db["inputs"].create_index(["problem"])
    db["input_checks"].create({
        "input": str, "substrate_hash": str, "run": int, "valid": int, "outcome": str, "margin": float,
        "max_abs": float, "ref_ms": float, "kernel_ms": float, "note": str,
    }, pk=("input", "substrate_hash"), foreign_keys=[("input", "inputs", "id"), ("run", "runs", "id")])
    db["cells"].create({
        "mutant": str, "input": str, "outcome": str, "margin": float, "max_abs": float, "ms": float,
        "run": int, "note": str,
    }, pk=("mutant", "input"), foreign_keys=[("mutant", "mutants", "id"), ("input", "inputs", "id"),
                                             ("run", "runs", "id")])
    db["cells"].create_index(["input"])


@migration
def m004_reference_magnitudes(db: sqlite_utils.Database) -> None:
    # max |ref| decides whether an all-zeros output passes at tolerance t (max |ref| <= t): the
    # blind band; mean |ref| is the output's typical magnitude.
    db["input_checks"].add_column("ref_abs_max", float)
    db["input_checks"].add_column("ref_abs_mean", float)


@migration
def m005_problem_scoped_mutant_ids(db: sqlite_utils.Database) -> None:
    # Ids were a hash of the substrate and the site alone, so two problems sharing one substrate
    # source got the same ids; re-key every mutant with its problem, and the cells with it.
    rows = db.execute('select id, problem, substrate_hash, rule, start, "end", replacement from mutants').fetchall()
    db.execute("create temp table _rekey (old text primary key, new text)")
    db.conn.executemany("insert into _rekey values (?, ?)", [(r[0], _m005_mutant_id(*r[1:])) for r in rows])
    db.execute("update mutants set id = (select new from _rekey where old = mutants.id)")
    db.execute("update mutants set duplicate_of = (select new from _rekey where old = mutants.duplicate_of) "
               "where duplicate_of is not null")
    db.execute("update cells set mutant = (select new from _rekey where old = cells.mutant)")
    db.execute("drop table _rekey")


@migration
def m006_reference_checks(db: sqlite_utils.Database) -> None:
    # kbm refcheck: the fp32 reference against its own fp64 evaluation, per input (not per substrate)
    db["reference_checks"].create({"input": str, "run": int, "device": str, "fp64_margin": float,
                                   "ref_abs_max": float, "note": str}, pk="input",
                                  foreign_keys=[("input", "inputs", "id"), ("run", "runs", "id")])


@migration
def m007_problem_sample(db: sqlite_utils.Database) -> None:
    # `kbm run --sample F` evaluates a deterministic share of each problem's mutants; scores are
    # over that share (NULL: all of them), so an unevaluated mutant is not counted as missing.
    db["problems"].add_column("sample", float)


@migration
def m008_run_stopped(db: sqlite_utils.Database) -> None:
    # when an interrupted run (Ctrl-C, a time limit) stopped: its wall time, hence its throughput
    db["runs"].add_column("stopped", str)


@migration
def m009_problem_full_rows(db: sqlite_utils.Database) -> None:
    # `kbm run --first-kill` evaluates mutants without full rows: audits are exact on them, suites
    # are not. The share of a problem's mutants that has full rows (NULL: the whole sample).
    db["problems"].add_column("full_rows", float)


@migration
def m010_run_stats(db: sqlite_utils.Database) -> None:
    # where an evaluate run's worker time went (`analysis.runs.TIME_SPLIT`), as JSON: input
    # checks are overwritten when a restarted worker checks an input again, so they undercount it
    db["runs"].add_column("stats", str)


@migration
def m011_problem_constants(db: sqlite_utils.Database) -> None:
    # a protocol's hook (fuzz-shapes' size variation) builds its specs from the problem's module
    # constants: stored with the problem, its inputs are known wherever the store goes, checkout or not
    db["problems"].add_column("constants", str)


def _m005_mutant_id(problem: str, substrate_hash: str, rule: str, start: int, end: int, replacement: str) -> str:
    # the mutant-id formula as m005 applied it (mutation.mutants.mutant_id today): frozen here
    text = f"{problem}\0{substrate_hash}\0{rule}\0{start}\0{end}\0{replacement}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@migration
def m012_quarantined_status(db: sqlite_utils.Database) -> None:
    # a mutant that crashed or hung on the probe input was `crash_probe`; `quarantined` says what it is
    db.execute("update mutants set status = 'quarantined' where status = 'crash_probe'")


@migration
def m013_margins(db: sqlite_utils.Database) -> None:
    # margins beyond the two columns (`kbm_toolkit.judging`): against another reference (TF32
    # convolutions, as the benchmarks run) or at another atol/rtol ratio, as JSON {key: margin};
    # NULL where the run computed none (every cell before this schema)
    db["cells"].add_column("margins", str)
    db["input_checks"].add_column("margins", str)


@migration
def m014_superseded_cells(db: sqlite_utils.Database) -> None:
    # a cell measured again (`kbm run --redo-overwritten`) replaces the stored one, which is kept
    # here with the run that superseded it: no stored result is lost, and old figures stay reproducible
    db["superseded_cells"].create({
        "mutant": str, "input": str, "outcome": str, "margin": float, "max_abs": float, "ms": float,
        "run": int, "note": str, "margins": str, "superseded_by": int,
    }, pk=("mutant", "input", "superseded_by"))


@migration
def m015_submissions(db: sqlite_utils.Database) -> None:
    # `kbm verify`: candidate solutions in the benchmark's format, judged on protocols' inputs.
    # A submission is its text (the id hashes it with its problem): an edited file is a new one.
    # Its cells keep margins, as the kill matrix's do, so every protocol's verdict is a query.
    db["submissions"].create({
        "id": str, "problem": str, "path": str, "name": str, "sample": int, "source_hash": str,
        "status": str, "note": str, "load_ms": float, "run": int, "added": str,
    }, pk="id", foreign_keys=[("problem", "problems", "key"), ("run", "runs", "id")])
    db["submissions"].create_index(["problem"])
    db["submission_cells"].create({
        "submission": str, "input": str, "outcome": str, "margin": float, "max_abs": float, "margins": str,
        "ms": float, "run": int, "note": str,
    }, pk=("submission", "input"), foreign_keys=[("submission", "submissions", "id"), ("input", "inputs", "id"),
                                                 ("run", "runs", "id")])


@migration
def m016_reference_violations(db: sqlite_utils.Database) -> None:
    # kbm refcheck: how many output positions the fp32 reference gets wrong against fp64 at each
    # tolerance ({"0.01": n, ...} of `positions`), and a checksum of its output, so a problem whose
    # output is the same on every input (it ignores the input) is found; NULL for checks made before
    db["reference_checks"].add_column("violations", str)
    db["reference_checks"].add_column("positions", int)
    db["reference_checks"].add_column("output_checksum", str)


@migration
def m017_submission_build_time(db: sqlite_utils.Database) -> None:
    # kbm verify: how long building the submission's model (`ModelNew(*init)` on the CPU, then moved
    # to the GPU) took on the cell that built it; NULL where it was kept from an earlier input
    db["submission_cells"].add_column("build_ms", float)


@migration
def m018_mutant_positions(db: sqlite_utils.Database) -> None:
    # level 3: a mutant launched at one place in the network (`mutation.positions`): the launch's
    # index in the official forward, the forward's launch count, and `NAME#K` (the K-th launch of
    # kernel NAME), which the evaluator counts; NULL for a mutant at every launch
    db["mutants"].add_column("position", int)
    db["mutants"].add_column("launches", int)
    db["mutants"].add_column("launch", str)


@migration
def m019_protocols(db: sqlite_utils.Database) -> None:
    # protocols given by path to `kbm run` or emitted by `kbm targets`, their protocol.toml as text:
    # an audit names them after their folder is gone, and a store carries the protocols of its cells
    db["protocols"].create({"name": str, "toml": str, "source": str, "recorded": str}, pk="name")


@migration
def m020_reference_nudges(db: sqlite_utils.Database) -> None:
    # kbm refcheck: how many output positions the fp32 reference moves past each tolerance when its
    # floating inputs move one ulp ({"0.01": n, ...} of `positions`): an output that moves that far
    # under rounding-sized changes cannot be refereed by any fp32 kernel; NULL for checks made before
    db["reference_checks"].add_column("nudge_violations", str)


@migration
def m021_shape_verdicts(db: sqlite_utils.Database) -> None:
    # kbm equivalence: whether a mutant runs the original's machine code (or launches) at the shapes
    # one input builds (`shape`, InputSpec.shape_key): same 1, 0 when it differs, NULL undecided
    db["shape_verdicts"].create({
        "mutant": str, "shape": str, "same": int, "note": str, "arch": str, "nvrtc": str, "judged": str,
    }, pk=("mutant", "shape"), foreign_keys=[("mutant", "mutants", "id")])
