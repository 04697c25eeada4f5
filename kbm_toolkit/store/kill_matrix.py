"""The kill matrix: inputs, each input's check against the correct substrate, and the cells."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Iterable

from kbm_toolkit.store.base import Tables, chunks
from kbm_toolkit.store.sampling import in_sample
from kbm_toolkit.store.values import finite_or_none, margins_json, now
from kbm_toolkit.vocabulary import OUT_OF_MEMORY


RESTORED_NOTE = "wrote over its input or the reference (restored)"
"""The note of a writer's cell before the evaluator took checksums (2026-12-02)."""

def _measured(cells: str = "c.") -> str:
    """The cells that are measurements (SQL over `cells`, named by the prefix `cells`): not a launch
    that ran out of memory."""
    return f"not ({cells}outcome = 'crash' and coalesce({cells}note, '') like '{OUT_OF_MEMORY}%')"


_MEASURED = _measured()


class KillMatrix(Tables):
    """The `inputs`, `input_checks`, `reference_checks`, `cells` and `superseded_cells` tables."""

    def record_inputs(self, specs: list[Any], source: str) -> None:
        """Store input specs (idempotent: an input is identified by its spec)."""
        with self.db.conn:
            self.db["inputs"].insert_all(({"id": s.id, "problem": s.problem, "label": s.label, "source": source,
                                           "spec": json.dumps(s.record(), sort_keys=True), "created": now()}
                                          for s in specs), pk="id", ignore=True)

    def record_reference_check(self, run_id: int, row: dict[str, Any]) -> None:
        """The fp32 reference against its fp64 evaluation on one input (kbm refcheck): its margin,
        the positions it gets wrong at each tolerance, those it moves past each tolerance when its
        inputs move one ulp, and its output's checksum."""
        with self.db.conn:
            self.db["reference_checks"].upsert({
                "input": row["input"], "run": run_id, "device": row.get("device"),
                "fp64_margin": finite_or_none(row.get("fp64_margin")), "ref_abs_max": row.get("ref_abs_max"),
                "note": row.get("note"), "positions": row.get("positions"),
                "violations": json.dumps(row["violations"], sort_keys=True) if row.get("violations") is not None else None,
                "nudge_violations": (json.dumps(row["nudge_violations"], sort_keys=True)
                                     if row.get("nudge_violations") is not None else None),
                "output_checksum": row.get("output_checksum")}, pk="input")

    def reference_checks(self) -> dict[str, dict[str, Any]]:
        """Every stored reference check, by input id (a non-finite fp64 margin reads as +inf)."""
        def margin(r: dict[str, Any]) -> float | None:
            off = r["fp64_margin"] is None and (r["note"] or "").startswith("the fp32 reference is")
            return float("inf") if off else r["fp64_margin"]

        return {r["input"]: {**r, "fp64_margin": margin(r),
                             "violations": json.loads(r["violations"]) if r.get("violations") else None,
                             "nudge_violations": json.loads(r["nudge_violations"]) if r.get("nudge_violations") else None}
                for r in self.db["reference_checks"].rows}

    def record_input_check(self, substrate_hash: str, run_id: int, check: dict[str, Any]) -> None:
        """The reference's and the correct substrate's result on one input: its validity."""
        with self.db.conn:
            self.db["input_checks"].upsert({
                "input": check["input"], "substrate_hash": substrate_hash, "run": run_id,
                "valid": int(bool(check["valid"])), "outcome": check.get("outcome"),
                "margin": finite_or_none(check.get("margin")), "max_abs": finite_or_none(check.get("max_abs")),
                "ref_ms": check.get("ref_ms"), "kernel_ms": check.get("kernel_ms"), "note": check.get("note"),
                "ref_abs_max": check.get("ref_abs_max"), "ref_abs_mean": check.get("ref_abs_mean"),
                "margins": margins_json(check.get("margins")),
            }, pk=("input", "substrate_hash"))

    def add_check_margins(self, substrate_hash: str, input_id: str, margins: dict[str, float]) -> None:
        """Add margins (against another reference, say) to a stored input check, keeping the rest."""
        row = self.db.execute("select margins from input_checks where input = ? and substrate_hash = ?",
                              [input_id, substrate_hash]).fetchone()
        if row is None:
            return
        merged = {**json.loads(row[0] or "{}"), **margins}
        with self.db.conn:
            self.db.execute("update input_checks set margins = ? where input = ? and substrate_hash = ?",
                            [margins_json(merged), input_id, substrate_hash])

    def record_cells(self, run_id: int, cells: list[dict[str, Any]], replace: bool = False) -> None:
        """Commit a batch of cells; a cell already stored is kept, never duplicated (with `replace`,
        a cell measured again takes its place, and the one it replaces moves to `superseded_cells`)."""
        if not cells:
            return
        with self.db.conn:
            # the cell it replaces is kept, with the run that measured it again; a cell that is no
            # measurement (out of memory) is always replaced
            only = "" if replace else f"and not ({_measured('')})"
            self.db.conn.executemany(
                "insert or ignore into superseded_cells (mutant, input, outcome, margin, max_abs, ms, run, "
                "note, margins, superseded_by) select mutant, input, outcome, margin, max_abs, ms, run, note, "
                f"margins, ? from cells where mutant = ? and input = ? {only}",
                [(run_id, c["mutant"], c["input"]) for c in cells])
            if not replace:
                self.db.conn.executemany(f"delete from cells where mutant = ? and input = ? {only}",
                                         [(c["mutant"], c["input"]) for c in cells])
            self.db["cells"].insert_all(({
                "mutant": c["mutant"], "input": c["input"], "outcome": c["outcome"],
                "margin": finite_or_none(c.get("margin")), "max_abs": finite_or_none(c.get("max_abs")),
                "ms": c.get("ms"), "run": run_id, "note": c.get("note"), "margins": margins_json(c.get("margins")),
            } for c in cells), pk=("mutant", "input"), ignore=not replace, replace=replace)

    def overwrite_suspects(self, problem: str | None = None) -> dict[str, set[str]]:
        """Input -> the mutants whose cells on it an old evaluator measured after a mutant of the same
        problem and run wrote over an input and was restored from copies (`RESTORED_NOTE`).

        Those copies sat in the memory a stray write reaches, and the model's weights, cached across
        a task's inputs, were never checked: every later cell of the problem in that run may have
        run on bits that were not its spec's (the probe is a task of its own: a writer on it taints
        only the probe's cells). Distinct mutants only: a quarantined one is never scored, nor run
        again."""
        rows = self.db.execute(
            "with w as (select m.problem, c.run, case when i.label = 'probe' then c.input end as only_on, "
            "  min(c.rowid) as at from cells c join mutants m on m.id = c.mutant join inputs i on i.id = c.input "
            "  where c.note = :note and (:p is null or m.problem = :p) group by 1, 2, 3) "
            "select distinct c.input, c.mutant from w join mutants m on m.problem = w.problem and m.status = 'distinct' "
            "join cells c on c.mutant = m.id and c.run = w.run and c.rowid > w.at "
            "and (w.only_on is null or c.input = w.only_on)", {"note": RESTORED_NOTE, "p": problem}).fetchall()
        found: dict[str, set[str]] = defaultdict(set)
        for input_id, mutant in rows:
            found[input_id].add(mutant)
        return dict(found)

    def problem_cells(self, problem: str) -> dict[tuple[str, str], tuple[str, float | None]]:
        """(mutant, input) -> (outcome, margin) for every cell `problem` already has (measurements
        only: a launch that ran out of memory is measured again)."""
        rows = self.db.execute("select c.mutant, c.input, c.outcome, c.margin from cells c "
                               f"join mutants m on m.id = c.mutant where m.problem = ? and {_MEASURED}",
                               [problem]).fetchall()
        return {(a, b): (o, x) for a, b, o, x in rows}

    def checked_inputs(self, problem: str, substrate_hash: str) -> dict[str, dict[str, Any]]:
        """input id → its stored check for this substrate."""
        rows = self.db.query("select k.* from input_checks k join inputs i on i.id = k.input "
                             "where i.problem = ? and k.substrate_hash = ?", [problem, substrate_hash])
        return {r["input"]: r for r in rows}

    def witnesses(self, mutant_id: str, tolerance: float) -> list[dict[str, Any]]:
        """The valid inputs (at `tolerance`) on which the mutant verifiably fails: a query, not a copy."""
        return list(self.db.query(
            "select c.*, i.label, i.spec, k.margin as correct_margin from cells c "
            "join inputs i on i.id = c.input join mutants m on m.id = c.mutant "
            "join input_checks k on k.input = c.input and k.substrate_hash = m.substrate_hash "
            "where c.mutant = :m and k.valid = 1 and k.outcome = 'pass' and k.margin <= :t "
            f"and (c.outcome != 'pass' or c.margin > :t) and {_MEASURED} order by c.margin is null desc, c.margin desc",
            {"m": mutant_id, "t": tolerance}))

    def mutant_verdicts(self, tolerance: float, problem: str | None = None) -> dict[str, str]:
        """mutant id → final status at `tolerance`: the screening status for non-distinct mutants,
        `quarantined`, `witnessed` (killed by a valid input) or `unwitnessed`."""
        rows = self.db.query(
            "select m.id, m.status, exists(select 1 from cells c "
            "  join input_checks k on k.input = c.input and k.substrate_hash = m.substrate_hash "
            "  where c.mutant = m.id and k.valid = 1 and k.outcome = 'pass' and k.margin <= :t "
            f"  and (c.outcome != 'pass' or c.margin > :t) and {_MEASURED}) as killed "
            "from mutants m where (:p is null or m.problem = :p)", {"t": tolerance, "p": problem})
        return {r["id"]: (r["status"] if r["status"] != "distinct" else
                          "witnessed" if r["killed"] else "unwitnessed") for r in rows}

    def valid_input_specs(self, problem: str, substrate_hash: str) -> list[str]:
        """The spec records (JSON) of the inputs of `problem` its substrate at `substrate_hash` was
        checked valid on, by input id."""
        rows = self.db.execute("select i.spec from input_checks k join inputs i on i.id = k.input "
                               "where i.problem = ? and k.substrate_hash = ? and k.valid = 1 order by i.id",
                               [problem, substrate_hash]).fetchall()
        return [r[0] for r in rows]

    def input_row(self, input_id: str) -> dict[str, Any]:
        """One stored input: its spec record (JSON), label and source."""
        return self.db["inputs"].get(input_id)

    def stopped_on(self, input_ids: list[str], outcomes: Iterable[str]) -> set[str]:
        """Mutants with a cell of one of `outcomes` (a crash, a timeout) on one of `input_ids`."""
        outcomes = list(outcomes)
        if not input_ids:
            return set()
        rows = self.db.execute(
            f"select distinct mutant from cells c where input in ({', '.join('?' * len(input_ids))}) "
            f"and outcome in ({', '.join('?' * len(outcomes))}) and {_MEASURED}", [*input_ids, *outcomes]).fetchall()
        return {r[0] for r in rows}

    def mutant_cells(self, mutant_id: str, substrate_hash: str) -> list[dict[str, Any]]:
        """Every cell of one mutant with its input's label and spec and the correct kernel's check on it."""
        return list(self.db.query(
            "select c.input, c.outcome, c.margin, i.label, i.spec, k.valid, k.margin as correct_margin "
            "from cells c join inputs i on i.id = c.input "
            "left join input_checks k on k.input = c.input and k.substrate_hash = :h "
            "where c.mutant = :m order by i.label", {"m": mutant_id, "h": substrate_hash}))

    def margins_beside_correct(self, mutant_ids: Iterable[str]
                               ) -> dict[str, list[tuple[str, str, float | None, float]]]:
        """mutant id → (input, outcome, margin, the correct kernel's margin) of each cell on an input
        valid for the mutant's substrate: whether a surviving mutant changed the output at all."""
        found = defaultdict(list)
        for chunk in chunks(mutant_ids):
            for mutant, input_id, outcome, margin, correct in self.db.execute(
                    "select c.mutant, c.input, c.outcome, c.margin, k.margin from cells c join mutants m on m.id = c.mutant "
                    "join input_checks k on k.input = c.input and k.substrate_hash = m.substrate_hash "
                    f"where k.valid = 1 and k.margin is not null and {_MEASURED} "
                    f"and c.mutant in ({', '.join('?' * len(chunk))})",
                    chunk):
                found[mutant].append((input_id, outcome, margin, correct))
        return dict(found)

    def matrix_rows(self, floor: float | None = None, full_rows: bool = False,
                    sample: float | None = None, details: bool = False) -> dict[str, dict[str, Any]]:
        """Per problem with scored mutants, what scoring reads: its row, its scored mutants, its input
        checks, its cells, how many scored mutants each input has a cell for, and who has one on an
        input with gaps.

        Scored: distinct, of a refereeable problem, in the problem's sample (with `full_rows`, its
        share with full rows; with `sample`, at most that share). Four queries in all, whatever the
        number of problems. With `floor`, cells that pass with a margin at or under it are left
        out: they kill at no tolerance >= floor, and on a real pool they are most of the cells.
        With `details`, each problem also has `details`: (mutant, input) -> (max_abs, margins) for
        the cells kept, and a cell is left out only when every margin it has is at or under `floor`.
        """
        problems = self.problem_rows()
        self.db.conn.create_function("kbm_in_sample", 2, in_sample, deterministic=True)
        share = "coalesce(p.full_rows, p.sample)" if full_rows else "p.sample"
        if sample is not None:
            share = f"min(coalesce({share}, 1.0), :sample)"
        scored = ("m.status = 'distinct' and (p.key is null or ((p.refereeable is null or p.refereeable != 0) "
                  f"and ({share} is null or kbm_in_sample(m.id, {share}))))")
        args: dict[str, Any] = {"sample": sample}
        mutants: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        for r in self.db.query("select m.id, m.problem, m.substrate_hash, m.rule, m.family, m.name, m.status, "
                               "m.position, m.launches "
                               f"from mutants m left join problems p on p.key = m.problem where {scored}", args):
            mutants[r["problem"]][r["id"]] = r
        hashes = {k: {m["substrate_hash"] for m in ms.values()} for k, ms in mutants.items()}
        checks: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        for r in self.db.query("select k.*, i.problem, i.label, i.spec from input_checks k "
                               "join inputs i on i.id = k.input"):
            if r["substrate_hash"] in hashes.get(r["problem"], ()):
                checks[r["problem"]][r["input"]] = r
        # the cells of the scored mutants only: a sampled problem may hold cells outside its sample
        distinct = (f"join mutants m on m.id = c.mutant left join problems p on p.key = m.problem "
                    f"where {scored} and {_MEASURED}")
        evaluated: dict[str, dict[str, int]] = defaultdict(dict)
        for input_id, problem, n in self.db.execute(f"select c.input, m.problem, count(*) from cells c {distinct} "
                                                    "group by c.input, m.problem", args):
            evaluated[problem][input_id] = n
        # who has a cell on an input with gaps (a crash stop, --first-kill, an unfinished run): none on a
        # full matrix. Read with the cells in one pass: an `input in (list)` filter let SQLite probe every
        # mutant against every listed input, which on a first-kill pool of 23,000 mutants took 40 s
        gappy = {k: {i for i, n in counts.items() if n < len(mutants[k])} for k, counts in evaluated.items()}
        cells: dict[str, dict[tuple[str, str], tuple[str, float | None]]] = defaultdict(dict)
        extra: dict[str, dict[tuple[str, str], tuple[float | None, dict[str, float]]]] = defaultdict(dict)
        present: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        columns = "c.max_abs, c.margins" if details else "null, null"
        for mutant, input_id, outcome, margin, max_abs, margins, problem in self.db.execute(
                f"select c.mutant, c.input, c.outcome, c.margin, {columns}, m.problem from cells c {distinct}", args):
            if input_id in gappy[problem]:
                present[problem][input_id].add(mutant)
            others = json.loads(margins) if margins else {}
            largest = max([max_abs if details else margin, *others.values()], key=lambda x: math.inf if x is None else x)
            if floor is None or not (outcome == "pass" and largest is not None and largest <= floor):
                cells[problem][(mutant, input_id)] = (outcome, margin)
                if details:
                    extra[problem][(mutant, input_id)] = (max_abs, others)
        return {k: {"problem": problems.get(k, {}), "mutants": mutants[k], "checks": checks[k], "cells": cells[k],
                    "evaluated": evaluated[k], "present": dict(present[k]), "details": extra[k]}
                for k in sorted(mutants)}
