from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kbm_toolkit.errors import StoreError
from kbm_toolkit.evaluation.gate import GateResult, GateRow
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import Store, copy_store
from kbm_toolkit.store.schema import MIGRATIONS


def test_new_store_has_every_migration_and_none_pending(fresh_store: Store) -> None:
    assert fresh_store.applied() == [name for name, _ in MIGRATIONS]
    assert fresh_store.pending() == [] and fresh_store.schema_version == len(MIGRATIONS)
    assert {"runs", "problems", "substrates", "gate_inputs"} <= set(fresh_store.db.table_names())


def test_migrating_twice_is_harmless(db_path: Path) -> None:
    Store(db_path).close()
    store = Store(db_path)
    assert store.migrate() == [] and store.schema_version == len(MIGRATIONS)


def test_file_store_uses_wal(db_path: Path) -> None:
    store = Store(db_path)
    assert store.db.journal_mode == "wal"


def test_a_store_from_a_newer_kbm_is_refused(db_path: Path) -> None:
    store = Store(db_path)
    store.db["_kbm_migrations"].insert({"name": "m999_future", "applied": "2030-01-01"})
    store.close()
    with pytest.raises(StoreError, match="newer kbm \\(migration m999_future\\)"):
        Store(db_path)


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database, just text " * 100)
    with pytest.raises(StoreError, match="not a usable kbm store"):
        Store(path)


def _gate_result(problem: str, status: str = "passed") -> GateResult:
    rows = [GateRow("official trial 0", {"seed": 1}, "aaaa", "pass", 1e-7, 2e-7, 1.0, 0.5),
            GateRow("official x -1", {"seed": 1}, "bbbb", "value" if status == "failed" else "pass", 2e-2, 3e-2),
            GateRow("odd shape", {"seed": 1}, "cccc", "skipped", note="reference is non-finite")]
    return GateResult(problem, status, 1e-3, worst_margin=2e-2 if status == "failed" else 1e-7, rows=rows)


def test_gate_verdicts_and_rows_round_trip(fresh_store: Store, demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    fresh_store.record_problem(problem)
    fresh_store.record_compile(problem.key, "src", "img", "sm_90", ["leaky_relu"], 12.0)
    run = fresh_store.start_run("gate", {"gpu": "NVIDIA H200", "arch": "sm_90", "kbm": "0.1.0"})
    fresh_store.record_gate(run, _gate_result(problem.key))
    fresh_store.finish_run(run)
    (row,) = list(fresh_store.substrates())
    assert row["gate_status"] == "passed" and row["gate_gpu"] == "NVIDIA H200"
    assert fresh_store.gated() == [problem.key]
    assert [r["outcome"] for r in fresh_store.gate_rows(problem.key, run)] == ["pass", "pass", "skipped"]
    assert fresh_store.run(run)["finished"] is not None


def test_a_changed_source_clears_the_old_verdict(fresh_store: Store, demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    fresh_store.record_problem(problem)
    fresh_store.record_compile(problem.key, "src-1", "img-1", "sm_90", ["k"], 1.0)
    fresh_store.record_gate(fresh_store.start_run("gate", {}), _gate_result(problem.key))
    fresh_store.record_compile(problem.key, "src-1", "img-1", "sm_90", ["k"], 1.0)
    assert fresh_store.gated() == [problem.key]       # same source: verdict kept
    fresh_store.record_compile(problem.key, "src-2", "img-2", "sm_90", ["k"], 1.0)
    assert fresh_store.gated() == []                   # new source: must be gated again


def test_regating_replaces_rows_without_duplicates(fresh_store: Store, demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    fresh_store.record_problem(problem)
    run = fresh_store.start_run("gate", {})
    fresh_store.record_gate(run, _gate_result(problem.key, "failed"))
    fresh_store.record_gate(run, _gate_result(problem.key, "passed"))
    assert fresh_store.db["gate_inputs"].count == 3
    assert next(fresh_store.substrates())["gate_status"] == "passed"


def test_readonly_store_cannot_be_written(db_path: Path) -> None:
    Store(db_path).close()
    store = Store(db_path, readonly=True)
    with pytest.raises(sqlite3.OperationalError):
        store.start_run("gate", {})


def test_reference_magnitudes_are_stored_with_input_checks(fresh_store: Store) -> None:
    fresh_store.record_input_check("h", fresh_store.start_run("evaluate", {}),
                                   {"input": "i1", "valid": True, "outcome": "pass", "margin": 0.0,
                                    "ref_abs_max": 2.5e-6, "ref_abs_mean": 1e-6})
    row = fresh_store.db["input_checks"].get(("i1", "h"))
    assert (row["ref_abs_max"], row["ref_abs_mean"]) == (2.5e-6, 1e-6)


# The ids m005 gives these three sites, recorded once by running ead0a5d's formula
# (kbm_toolkit/mutate.py:mutant_id there, the one m005 applied before it kept its own frozen copy):
#   mutant_id("a/1", "s" * 64, "mul2div", 10, 11, "/") and the same on "b/1", then "b/1" at 20-21.
# A change to the migration's formula, or to which columns it reads, fails the test.
M005_IDS = {"a/110": "aba988a41d83", "b/110": "35c1567c585d", "b/120": "4d18a471ca9f"}


def test_mutant_ids_are_rekeyed_by_problem_with_their_cells(db_path: Path) -> None:
    from kbm_toolkit.store.schema import m005_problem_scoped_mutant_ids

    store = Store(db_path)
    site = {"substrate_hash": "s" * 64, "rule": "mul2div", "start": 10, "end": 11, "replacement": "/"}
    for problem, old in (("a/1", "old000000001"), ("b/1", "old000000002")):
        store.db["mutants"].insert({"id": old, "problem": problem, **site, "status": "distinct"})
        store.db["cells"].insert({"mutant": old, "input": "i1", "outcome": "pass", "margin": 0.5})
    store.db["mutants"].insert({"id": "old000000003", "problem": "b/1", **{**site, "start": 20, "end": 21},
                                "status": "duplicate", "duplicate_of": "old000000002"})
    m005_problem_scoped_mutant_ids(store.db)
    new = {r["problem"] + str(r["start"]): r for r in store.db["mutants"].rows}
    assert {site: r["id"] for site, r in new.items()} == M005_IDS
    assert new["b/120"]["duplicate_of"] == M005_IDS["b/110"]
    assert {r["mutant"] for r in store.db["cells"].rows} == {M005_IDS["a/110"], M005_IDS["b/110"]}


def test_merging_stores_renumbers_runs_keeps_existing_rows_and_is_idempotent(tmp_path: Path) -> None:
    a, b = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    for store, outcome in ((a, "pass"), (b, "value")):
        run = store.start_run("evaluate", {"gpu": f"GPU of {store.path.stem}"})
        store.db["mutants"].insert({"id": "m1", "problem": "p/1", "status": "distinct"})
        store.record_cells(run, [{"mutant": "m1", "input": "shared", "outcome": outcome, "margin": 0.5}])
    b.record_cells(1, [{"mutant": "m1", "input": "only-b", "outcome": "crash"}])
    b.start_run("gate", {"gpu": "G"})
    b.record_reference_check(b.start_run("refcheck", {"gpu": "G"}), {"input": "shared", "fp64_margin": 1e-7})
    added = a.merge(b)
    assert added["runs"] == 3 and added["cells"] == 1 and added["mutants"] == 0 and added["reference_checks"] == 1
    cells = {r["input"]: r for r in a.db["cells"].rows}
    assert cells["shared"]["outcome"] == "pass"  # a's own cell is kept
    assert a.db["runs"].get(cells["only-b"]["run"])["gpu"] == "GPU of b"
    assert a.db["runs"].get(a.reference_checks()["shared"]["run"])["kind"] == "refcheck"
    assert a.merge(b) == {"problems": 0, "rules": 0, "substrates": 0, "gate_inputs": 0, "mutants": 0,
                          "inputs": 0, "input_checks": 0, "reference_checks": 0, "cells": 0, "superseded_cells": 0,
                          "submissions": 0, "submission_cells": 0, "protocols": 0, "shape_verdicts": 0}


def test_merging_a_store_that_measured_cells_again_replaces_them_and_keeps_the_old(tmp_path: Path) -> None:
    pool = Store(tmp_path / "pool.db")
    first = pool.start_run("evaluate", {"gpu": "G"})
    pool.db["mutants"].insert_all([{"id": m, "problem": "p/1", "status": "distinct"} for m in ("m1", "m2")])
    pool.record_cells(first, [{"mutant": m, "input": "i", "outcome": "value", "margin": 9.5} for m in ("m1", "m2")])
    pool.close()
    copy_store(tmp_path / "pool.db", tmp_path / "redo.db")
    redo = Store(tmp_path / "redo.db")
    again = redo.start_run("evaluate", {"gpu": "G", "redo": True})
    redo.record_cells(again, [{"mutant": "m1", "input": "i", "outcome": "pass", "margin": 1e-7}], replace=True)
    pool = Store(tmp_path / "pool.db")
    added = pool.merge(redo)
    assert added["cells measured again"] == 1 and added["superseded_cells"] == 1
    cells = {r["mutant"]: r for r in pool.db["cells"].rows}
    assert (cells["m1"]["outcome"], cells["m1"]["margin"]) == ("pass", 1e-7)
    assert pool.db["runs"].get(cells["m1"]["run"])["environment"] == json.dumps({"gpu": "G", "redo": True}, sort_keys=True)
    assert cells["m2"]["outcome"] == "value"  # not measured again: kept
    (kept,) = pool.db["superseded_cells"].rows
    assert (kept["mutant"], kept["outcome"], kept["run"], kept["superseded_by"]) == ("m1", "value", first,
                                                                                     cells["m1"]["run"])
    assert "cells measured again" not in pool.merge(redo)  # idempotent


def test_a_readonly_store_at_an_older_schema_is_read_upgraded(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.store.store as store_module

    monkeypatch.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS[:-1])
    Store(db_path).close()  # written by the kbm before the last migration
    monkeypatch.undo()
    before = db_path.read_bytes()
    store = Store(db_path, readonly=True)
    assert store.applied() == [name for name, _ in store_module.MIGRATIONS]
    assert db_path.read_bytes() == before  # upgraded in memory only


def test_a_launch_that_ran_out_of_memory_is_no_measurement_and_the_next_run_replaces_it(db_path: Path) -> None:
    store = Store(db_path)
    first = store.start_run("evaluate", {"gpu": "G"})
    store.db["mutants"].insert({"id": "m1", "problem": "p/1", "status": "distinct", "substrate_hash": "h"})
    store.record_cells(first, [
        {"mutant": "m1", "input": "i", "outcome": "crash", "note": "OutOfMemoryError: CUDA out of memory. Tried to"},
        {"mutant": "m1", "input": "j", "outcome": "crash", "note": "AcceleratorError: an illegal memory access"}])
    assert store.problem_cells("p/1") == {("m1", "j"): ("crash", None)}
    assert store.stopped_on(["i"], ["crash"]) == set() and store.stopped_on(["i", "j"], ["crash"]) == {"m1"}
    rows = store.matrix_rows()["p/1"]
    assert ("m1", "i") not in rows["cells"] and rows["evaluated"] == {"j": 1}
    again = store.start_run("evaluate", {"gpu": "G"})
    store.record_cells(again, [{"mutant": "m1", "input": "i", "outcome": "pass", "margin": 1e-7},
                               {"mutant": "m1", "input": "j", "outcome": "pass", "margin": 0.0}])
    cells = {r["input"]: r for r in store.db["cells"].rows}
    assert (cells["i"]["outcome"], cells["i"]["run"]) == ("pass", again)
    assert cells["j"]["outcome"] == "crash"  # a measured crash stands
    (kept,) = store.db["superseded_cells"].rows
    assert (kept["input"], kept["outcome"], kept["superseded_by"]) == ("i", "crash", again)
