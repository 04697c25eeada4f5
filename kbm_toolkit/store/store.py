"""The store: one SQLite file (WAL) that holds every result; reports are queries over it.

Its schema changes only through the ordered migrations below, each applied in a transaction
together with its record in `_kbm_migrations`, so applying twice is harmless.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

import sqlite_utils

from kbm_toolkit.errors import StoreError

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
    from kbm_toolkit.mutation.mutants import mutant_id

    rows = db.execute('select id, problem, substrate_hash, rule, start, "end", replacement from mutants').fetchall()
    db.execute("create temp table _rekey (old text primary key, new text)")
    db.conn.executemany("insert into _rekey values (?, ?)", [(r[0], mutant_id(*r[1:])) for r in rows])
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
    # where an evaluate run's worker time went (`evaluation_run.TIME_SPLIT`), as JSON: input
    # checks are overwritten when a restarted worker checks an input again, so they undercount it
    db["runs"].add_column("stats", str)


@migration
def m011_problem_constants(db: sqlite_utils.Database) -> None:
    # a protocol's hook (fuzz-shapes' size variation) builds its specs from the problem's module
    # constants: stored with the problem, its inputs are known wherever the store goes, checkout or not
    db["problems"].add_column("constants", str)


def _share_columns(sample: float, full: float) -> dict[str, float | None]:
    """A problem's `sample` and `full_rows` columns for these shares (empty: all, and the whole sample)."""
    return {"sample": None if sample >= 1.0 else sample, "full_rows": None if full >= sample else full}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    """A kbm store at `path` (`:memory:` for tests); opening applies pending migrations."""

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self.readonly = readonly
        try:
            if readonly:
                conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
                self.db = sqlite_utils.Database(conn)
            elif self.path is None:
                self.db = sqlite_utils.Database(memory=True)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite_utils.Database(self.path)
                self.db.enable_wal()
            if readonly:
                self._check_known()
                if len(self.applied()) < len(MIGRATIONS):  # an older schema: read an upgraded copy in memory
                    memory = sqlite3.connect(":memory:")
                    conn.backup(memory)
                    conn.close()
                    self.db = sqlite_utils.Database(memory)
                    self.migrate()
            else:
                self.migrate()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"not a usable kbm store: {e}", path) from None

    # -- schema ---------------------------------------------------------------------------
    def applied(self) -> list[str]:
        """Names of the migrations this store has had."""
        if not self.db["_kbm_migrations"].exists():
            return []
        return [r["name"] for r in self.db["_kbm_migrations"].rows_where(order_by="rowid")]

    def pending(self) -> list[str]:
        """Migrations this kbm knows and the store lacks."""
        done = set(self.applied())
        return [name for name, _ in MIGRATIONS if name not in done]

    @property
    def schema_version(self) -> int:
        return len(self.applied())

    def _check_known(self) -> None:
        known = {name for name, _ in MIGRATIONS}
        unknown = [n for n in self.applied() if n not in known]
        if unknown:
            raise StoreError(f"written by a newer kbm (migration {unknown[0]}); upgrade kbm to read it",
                             self.path or ":memory:")

    def migrate(self) -> list[str]:
        """Apply pending migrations; return their names."""
        self._check_known()
        done = []
        for name, fn in MIGRATIONS:
            if name in set(self.applied()):
                continue
            with self.db.conn:
                fn(self.db)
                self.db["_kbm_migrations"].insert({"name": name, "applied": _now()}, pk="name")
            done.append(name)
        return done

    # -- runs -----------------------------------------------------------------------------
    def start_run(self, kind: str, env: dict[str, Any]) -> int:
        """Record the start of a run with its provenance; return its id."""
        import socket

        with self.db.conn:
            table = self.db["runs"].insert({
                "kind": kind, "started": _now(), "kbm": env.get("kbm"), "host": socket.gethostname(),
                "gpu": env.get("gpu"), "arch": env.get("arch"), "driver": env.get("driver"),
                "torch": env.get("torch"), "cuda_core": env.get("cuda_core"), "nvrtc": env.get("nvrtc"),
                "environment": json.dumps(env, sort_keys=True, default=str),
            })
        return int(table.last_pk)

    def finish_run(self, run_id: int, stats: dict[str, Any] | None = None) -> None:
        """Record that a run finished now, with what it measured of itself."""
        self._end_run(run_id, "finished", stats)

    def stop_run(self, run_id: int, stats: dict[str, Any] | None = None) -> None:
        """Record that an interrupted run stopped now (`finished` stays empty)."""
        self._end_run(run_id, "stopped", stats)

    def _end_run(self, run_id: int, column: str, stats: dict[str, Any] | None) -> None:
        values: dict[str, Any] = {column: _now()}
        if stats is not None:
            values["stats"] = json.dumps(stats, sort_keys=True)
        with self.db.conn:
            self.db["runs"].update(run_id, values)

    def run(self, run_id: int) -> dict[str, Any]:
        return self.db["runs"].get(run_id)

    # -- problems and substrates ------------------------------------------------------------
    def record_problem(self, problem: Any) -> None:
        """Insert or refresh one problem's row, its module constants included."""
        from kbm_toolkit.problems.problem import constants_text

        with self.db.conn:
            self.db["problems"].upsert({
                "key": problem.key, "level": problem.level, "number": problem.number,
                "name": problem.name, "origin": problem.origin, "path": str(problem.path),
                "source_hash": problem.source_hash, "constants": constants_text(problem),
            }, pk="key")

    def status_counts(self) -> Counter:
        """Mutants per screening status, over every problem."""
        return Counter(dict(self.db.execute("select status, count(*) from mutants group by status").fetchall()))

    def widen_sample(self, problem: str, fraction: float | None, full_rows: bool = True) -> None:
        """Record that `problem` is evaluated on `fraction` of its mutants (None: all), never
        narrowing; `full_rows=False` (`kbm run --first-kill`) leaves the share with full rows as it was.

        A problem with cells but no recorded share was evaluated in full before shares existed.
        """
        current = self._evaluated_share(problem).get(problem)
        if current is None and not self._has("problems", problem):
            return
        wanted = max(current or 0.0, 1.0 if fraction is None else fraction)
        full = self.full_rows().get(problem, current or 0.0)
        if full_rows:
            full = max(full, wanted)
        with self.db.conn:
            self.db["problems"].update(problem, _share_columns(wanted, full))

    def _full_share(self) -> dict[str, float]:
        """Problem -> share of its mutants evaluated with full rows (1.0: all), for evaluated problems."""
        narrower = self.full_rows()
        return {k: narrower.get(k, f) for k, f in self._evaluated_share().items()}

    def full_rows(self) -> dict[str, float]:
        """Problem -> the share of its mutants with full rows, where it is narrower than its sample."""
        return {r[0]: r[1] for r in self.db.execute("select key, full_rows from problems where full_rows is not null")}

    def _evaluated_share(self, problem: str | None = None) -> dict[str, float]:
        """Problem -> share of its mutants evaluated so far (1.0: all), for problems with cells or a share."""
        rows = self.db.execute("select p.key, p.sample from problems p where (:k is null or p.key = :k) and ("
                               "p.sample is not null or exists(select 1 from mutants m join cells c "
                               "on c.mutant = m.id where m.problem = p.key))", {"k": problem})
        return {k: 1.0 if f is None else f for k, f in rows}

    def evaluated_problems(self) -> set[str]:
        """Problems with cells, or with a share recorded by a sampled run."""
        return set(self._evaluated_share())

    def sample_summary(self, at_most: float | None = None) -> dict[str, Any] | None:
        """How much of the pool a sampled store evaluates, or is scored on when capped `at_most` a
        share (None when every problem is evaluated in full)."""
        if not self.samples() and (at_most is None or at_most >= 1.0):
            return None
        # every evaluated problem, those a wider run took to the whole pool (share 1.0) too
        shares = {k: min(f, 1.0 if at_most is None else at_most) for k, f in self._evaluated_share().items()}
        if not shares:
            return None
        from kbm_toolkit.mutation.mutants import in_sample

        rows = self.db.execute("select id, problem from mutants where status = 'distinct'").fetchall()
        pool = [(m, p) for m, p in rows if p in shares]
        begun = [f for f in shares.values() if f > 0]
        # an interrupted wider run leaves some problems a share ahead: the report says so
        return {"share": max(shares.values()), "least": min(begun, default=0.0), "problems": len(begun),
                "problems_at": [[f, begun.count(f)] for f in sorted(set(begun))],
                "mutants": sum(in_sample(m, shares[p]) for m, p in pool), "distinct": len(pool)}

    def fill_shares(self, keys: list[str]) -> dict[str, float | None]:
        """The share of each problem's mutants to evaluate when filling missing cells (None: all):
        its own where evaluated, else the store's widest share."""
        shares = self.samples()
        begun = {k for k, f in shares.items() if f == 0}  # a first run stopped before finishing them
        evaluated = self.evaluated_problems() - begun
        widest = max((f for f in shares.values() if f > 0), default=None)
        return {k: shares.get(k) if k in evaluated else widest for k in keys}

    def samples(self) -> dict[str, float]:
        """Problem -> the share of its mutants evaluated, for problems evaluated on a sample only."""
        return {r[0]: r[1] for r in self.db.execute("select key, sample from problems where sample is not null")}

    def record_compile(self, problem: str, source_hash: str, image_hash: str | None, arch: str,
                       kernels: list[str], compile_ms: float | None, message: str = "") -> None:
        """Record a substrate's compiled image; a new source clears its old gate verdict."""
        row = self.db["substrates"].get(problem) if self._has("substrates", problem) else None
        fresh = row is None or row["source_hash"] != source_hash or row["arch"] != arch
        values: dict[str, Any] = {
            "problem": problem, "source_hash": source_hash, "image_hash": image_hash, "arch": arch,
            "kernels": json.dumps(kernels), "compile_ms": compile_ms, "compiled": _now(),
        }
        if fresh:
            values.update(gate_status="compile_error" if image_hash is None else None, gate_tolerance=None,
                          gate_worst_margin=None, gate_run=None, gate_message=message or None)
        with self.db.conn:
            self.db["substrates"].upsert(values, pk="problem")

    def record_gate(self, run_id: int, result: Any) -> None:
        """Store one gate verdict and its per-input rows, in one transaction."""
        with self.db.conn:
            if self._has("problems", result.problem):
                unrefereeable = result.status == "unrefereeable"
                self.db["problems"].update(result.problem, {"refereeable": 0 if unrefereeable else 1,
                                                            "reason": result.message if unrefereeable else None})
            self.db["substrates"].upsert({
                "problem": result.problem, "gate_status": result.status,
                "gate_tolerance": result.tolerance, "gate_worst_margin": result.worst_margin,
                "gate_run": run_id, "gate_message": result.message or None,
            }, pk="problem")
            self.db["gate_inputs"].insert_all(({
                "problem": result.problem, "run": run_id, "position": i, "label": r.label,
                "spec_id": r.spec_id, "spec": json.dumps(r.spec, sort_keys=True), "outcome": r.outcome,
                "margin": _finite_or_none(r.margin), "max_abs": _finite_or_none(r.max_abs),
                "ref_ms": r.ref_ms, "kernel_ms": r.kernel_ms, "note": r.note or None,
            } for i, r in enumerate(result.rows)), pk=("problem", "run", "position"), replace=True)

    def substrates(self) -> Iterator[dict[str, Any]]:
        """Every substrate row with its latest gate verdict, in problem order."""
        yield from self.db.query(
            "select s.*, r.gpu as gate_gpu, r.started as gate_date from substrates s "
            "left join runs r on r.id = s.gate_run left join problems p on p.key = s.problem "
            "order by p.level, p.number")

    def gate_rows(self, problem: str, run_id: int) -> list[dict[str, Any]]:
        """Per-input gate rows of one problem in one run."""
        return list(self.db["gate_inputs"].rows_where("problem = ? and run = ?", [problem, run_id],
                                                      order_by="position"))

    def gated(self) -> list[str]:
        """Problems whose substrate passed its gate: the only ones mutation may use."""
        return [r["problem"] for r in self.db["substrates"].rows_where("gate_status = 'passed'")]

    # -- rules and mutants ------------------------------------------------------------------
    def record_rules(self, rules: list[Any]) -> None:
        """Upsert the rule inventory the mutants refer to."""
        with self.db.conn:
            self.db["rules"].upsert_all(({"name": r.name, "family": r.family, "description": r.description,
                                          "target": r.target, "origin": r.origin, "file": r.file}
                                         for r in rules), pk="name")

    def record_mutants(self, problem: str, screened: list[Any], diffs: dict[str, str], arch: str) -> None:
        """Replace one problem's mutants with a freshly screened set, in one transaction."""
        import hashlib

        rows = []
        for s in screened:
            m = s.mutant
            mutated = m.kernel_source if m.target == "kernel" else m.launcher_source
            rows.append({
                "id": m.id, "problem": problem, "substrate_hash": m.substrate_hash, "rule": m.rule,
                "family": m.family, "target": m.target, "line": m.site.line, "col": m.site.col,
                "start": m.site.start, "end": m.site.end, "original": m.site.original,
                "replacement": m.site.replacement, "name": m.name,
                "source_hash": hashlib.sha256(mutated.encode()).hexdigest(), "image_hash": s.image_hash,
                "status": s.status, "duplicate_of": s.duplicate_of, "compile_ms": s.compile_ms,
                "message": s.message or None, "diff": diffs[m.id], "arch": arch, "created": _now(),
            })
        with self.db.conn:
            self.db.execute("delete from mutants where problem = ?", [problem])
            self.db["mutants"].insert_all(rows, pk="id")

    def mutants(self, problem: str | None = None, rule: str | None = None, family: str | None = None,
                status: str | None = None) -> Iterator[dict[str, Any]]:
        """Mutant rows matching every filter given, in problem then source order."""
        where, params = [], []
        for column, value in (("problem", problem), ("rule", rule), ("family", family), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        yield from self.db["mutants"].rows_where(" and ".join(where) or None, params,
                                                 order_by="problem, start, rule")

    def mutant(self, mutant_id: str) -> dict[str, Any]:
        """One mutant by id or unique id prefix; StoreError if none or several match."""
        rows = list(self.db["mutants"].rows_where("id like ?", [mutant_id + "%"], limit=2))
        if len(rows) != 1:
            raise StoreError(f"{'no' if not rows else 'more than one'} mutant with id {mutant_id!r}",
                             self.path or ":memory:")
        return rows[0]

    # -- inputs and cells (the kill matrix) --------------------------------------------------
    def record_inputs(self, specs: list[Any], source: str) -> None:
        """Store input specs (idempotent: an input is identified by its spec)."""
        with self.db.conn:
            self.db["inputs"].insert_all(({"id": s.id, "problem": s.problem, "label": s.label, "source": source,
                                           "spec": json.dumps(s.record(), sort_keys=True), "created": _now()}
                                          for s in specs), pk="id", ignore=True)

    def record_reference_check(self, run_id: int, row: dict[str, Any]) -> None:
        """The fp32 reference against its fp64 evaluation on one input (kbm refcheck)."""
        with self.db.conn:
            self.db["reference_checks"].upsert({
                "input": row["input"], "run": run_id, "device": row.get("device"),
                "fp64_margin": _finite_or_none(row.get("fp64_margin")), "ref_abs_max": row.get("ref_abs_max"),
                "note": row.get("note")}, pk="input")

    def reference_checks(self) -> dict[str, dict[str, Any]]:
        """Every stored reference check, by input id (a non-finite fp64 margin reads as +inf)."""
        def margin(r: dict[str, Any]) -> float | None:
            off = r["fp64_margin"] is None and (r["note"] or "").startswith("the fp32 reference is")
            return float("inf") if off else r["fp64_margin"]

        return {r["input"]: {**r, "fp64_margin": margin(r)} for r in self.db["reference_checks"].rows}

    def record_input_check(self, substrate_hash: str, run_id: int, check: dict[str, Any]) -> None:
        """The reference's and the correct substrate's result on one input: its validity."""
        with self.db.conn:
            self.db["input_checks"].upsert({
                "input": check["input"], "substrate_hash": substrate_hash, "run": run_id,
                "valid": int(bool(check["valid"])), "outcome": check.get("outcome"),
                "margin": _finite_or_none(check.get("margin")), "max_abs": _finite_or_none(check.get("max_abs")),
                "ref_ms": check.get("ref_ms"), "kernel_ms": check.get("kernel_ms"), "note": check.get("note"),
                "ref_abs_max": check.get("ref_abs_max"), "ref_abs_mean": check.get("ref_abs_mean"),
            }, pk=("input", "substrate_hash"))

    def record_cells(self, run_id: int, cells: list[dict[str, Any]]) -> None:
        """Commit a batch of cells; a cell already stored is kept, never duplicated."""
        if not cells:
            return
        with self.db.conn:
            self.db["cells"].insert_all(({
                "mutant": c["mutant"], "input": c["input"], "outcome": c["outcome"],
                "margin": _finite_or_none(c.get("margin")), "max_abs": _finite_or_none(c.get("max_abs")),
                "ms": c.get("ms"), "run": run_id, "note": c.get("note"),
            } for c in cells), pk=("mutant", "input"), ignore=True)

    def problem_cells(self, problem: str) -> dict[tuple[str, str], tuple[str, float | None]]:
        """(mutant, input) -> (outcome, margin) for every cell `problem` already has."""
        rows = self.db.execute("select c.mutant, c.input, c.outcome, c.margin from cells c "
                               "join mutants m on m.id = c.mutant where m.problem = ?", [problem]).fetchall()
        return {(a, b): (o, x) for a, b, o, x in rows}

    def checked_inputs(self, problem: str, substrate_hash: str) -> dict[str, dict[str, Any]]:
        """input id → its stored check for this substrate."""
        rows = self.db.query("select k.* from input_checks k join inputs i on i.id = k.input "
                             "where i.problem = ? and k.substrate_hash = ?", [problem, substrate_hash])
        return {r["input"]: r for r in rows}

    def set_mutant_status(self, mutant_id: str, status: str, message: str | None = None) -> None:
        with self.db.conn:
            self.db["mutants"].update(mutant_id, {"status": status, "message": message})

    def witnesses(self, mutant_id: str, tolerance: float) -> list[dict[str, Any]]:
        """The valid inputs (at `tolerance`) on which the mutant verifiably fails: a query, not a copy."""
        return list(self.db.query(
            "select c.*, i.label, i.spec, k.margin as correct_margin from cells c "
            "join inputs i on i.id = c.input join mutants m on m.id = c.mutant "
            "join input_checks k on k.input = c.input and k.substrate_hash = m.substrate_hash "
            "where c.mutant = :m and k.valid = 1 and k.outcome = 'pass' and k.margin <= :t "
            "and (c.outcome != 'pass' or c.margin > :t) order by c.margin is null desc, c.margin desc",
            {"m": mutant_id, "t": tolerance}))

    def mutant_verdicts(self, tolerance: float, problem: str | None = None) -> dict[str, str]:
        """mutant id → final status at `tolerance`: the screening status for non-distinct mutants,
        `crash_probe`, `witnessed` (killed by a valid input) or `unwitnessed`."""
        rows = self.db.query(
            "select m.id, m.status, exists(select 1 from cells c "
            "  join input_checks k on k.input = c.input and k.substrate_hash = m.substrate_hash "
            "  where c.mutant = m.id and k.valid = 1 and k.outcome = 'pass' and k.margin <= :t "
            "  and (c.outcome != 'pass' or c.margin > :t)) as killed "
            "from mutants m where (:p is null or m.problem = :p)", {"t": tolerance, "p": problem})
        return {r["id"]: (r["status"] if r["status"] != "distinct" else
                          "witnessed" if r["killed"] else "unwitnessed") for r in rows}

    def _has(self, table: str, pk: Any) -> bool:
        try:
            self.db[table].get(pk)
            return True
        except sqlite_utils.db.NotFoundError:
            return False

    def merge(self, other: "Store") -> dict[str, int]:
        """Copy in the rows of `other` that this store lacks; return rows added per table.

        Runs are re-numbered (and every reference to them follows); a row this store already
        has (same key) is kept as it is, so merging the same store twice adds nothing.
        """
        if other.applied() != self.applied():
            raise StoreError("stores at different schema versions; open both with this kbm first",
                             other.path or ":memory:")
        added: dict[str, int] = {}
        def key(run: dict[str, Any]) -> tuple:
            return tuple(v for k, v in sorted(run.items()) if k not in ("id", "finished", "stopped"))

        shares = self._evaluated_share()
        for k, f in other._evaluated_share().items():
            shares[k] = max(shares.get(k, 0.0), f)
        full = self._full_share()
        for k, f in other._full_share().items():
            full[k] = max(full.get(k, 0.0), f)
        own_runs = {key(r): r["id"] for r in self.db["runs"].rows}
        run_map: dict[int, int] = {}
        with self.db.conn:
            for run in other.db["runs"].rows:
                if key(run) not in own_runs:
                    own_runs[key(run)] = self.db["runs"].insert({k: v for k, v in run.items() if k != "id"}).last_pk
                    added["runs"] = added.get("runs", 0) + 1
                run_map[run["id"]] = own_runs[key(run)]
            for table, pk, run_column in _MERGED:
                if not other.db[table].exists():
                    continue
                before = self.db[table].count
                rows = ({**r, run_column: run_map.get(r[run_column])} if run_column else r
                        for r in other.db[table].rows)
                self.db[table].insert_all(rows, pk=pk, ignore=True, batch_size=2000)
                added[table] = self.db[table].count - before
            for k, f in shares.items():  # the union of two samples is the wider one (samples nest)
                self.db.execute("update problems set sample = :sample, full_rows = :full_rows where key = :key",
                                {**_share_columns(f, full.get(k, 0.0)), "key": k})
        return added

    def close(self) -> None:
        self.db.close()


_MERGED: list[tuple[str, Any, str | None]] = [
    ("problems", "key", None), ("rules", "name", None), ("substrates", "problem", "gate_run"),
    ("gate_inputs", ("problem", "run", "position"), "run"), ("mutants", "id", None), ("inputs", "id", None),
    ("input_checks", ("input", "substrate_hash"), "run"), ("reference_checks", "input", "run"),
    ("cells", ("mutant", "input"), "run"),
]
"""Tables `Store.merge` copies, in dependency order: (table, primary key, column naming a run)."""


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of a store, its latest WAL writes included: SQLite's backup, never a file copy."""
    src, dst = sqlite3.connect(Path(source).resolve().as_uri() + "?mode=ro", uri=True), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def _finite_or_none(x: float | None) -> float | None:
    # JSON and SQLite disagree on infinities; None with a non-pass outcome means "+inf".
    return x if x is not None and x == x and abs(x) != float("inf") else None
