"""The pool: problems, their substrates and gate verdicts, the rules, and the mutants made from them."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any, Iterator

from kbm_toolkit.errors import StoreError
from kbm_toolkit.store.base import Tables
from kbm_toolkit.store.values import finite_or_none, now


class Pool(Tables):
    """The `problems`, `substrates`, `gate_inputs`, `rules` and `mutants` tables."""

    def record_problem(self, problem: Any) -> None:
        """Insert or refresh one problem's row (`problem.store_row()`: its module constants included)."""
        with self.db.conn:
            self.db["problems"].upsert(problem.store_row(), pk="key")

    def problems_with_mutants(self) -> list[str]:
        """Keys of the problems that have mutants, sorted."""
        return [r[0] for r in self.db.execute("select distinct problem from mutants order by problem")]

    def mutant_count(self) -> int:
        """How many mutants the store holds, whatever their status."""
        return self.db["mutants"].count

    def pool_counts(self, level: str | None = None, other: bool = False) -> dict[str, int]:
        """How many problems have mutants, and how many rules fired on them (of one `level`'s
        problems; with `other`, of every other level's)."""
        where, args = _of_level(level, other)
        problems, rules = self.db.execute(f"select count(distinct problem), count(distinct rule) from mutants {where}",
                                          args).fetchone()
        return {"problems": problems, "rules": rules}

    def family_status_counts(self) -> dict[str, Counter]:
        """Family -> mutants per screening status."""
        rows: dict[str, Counter] = {}
        for r in self.db.query("select family, status, count(*) as n from mutants group by family, status"):
            rows.setdefault(r["family"], Counter())[r["status"]] += r["n"]
        return rows

    def status_counts(self, level: str | None = None, other: bool = False) -> Counter:
        """Mutants per screening status, over every problem (of one `level`'s problems; with
        `other`, of every other level's)."""
        where, args = _of_level(level, other)
        return Counter(dict(self.db.execute(f"select status, count(*) from mutants {where} group by status",
                                            args).fetchall()))

    def record_compile(self, problem: str, source_hash: str, image_hash: str | None, arch: str,
                       kernels: list[str], compile_ms: float | None, message: str = "") -> None:
        """Record a substrate's compiled image; a new source clears its old gate verdict."""
        row = self.db["substrates"].get(problem) if self._has("substrates", problem) else None
        fresh = row is None or row["source_hash"] != source_hash or row["arch"] != arch
        values: dict[str, Any] = {
            "problem": problem, "source_hash": source_hash, "image_hash": image_hash, "arch": arch,
            "kernels": json.dumps(kernels), "compile_ms": compile_ms, "compiled": now(),
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
                "margin": finite_or_none(r.margin), "max_abs": finite_or_none(r.max_abs),
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

    def record_rules(self, rules: list[Any]) -> None:
        """Upsert the rule inventory the mutants refer to."""
        with self.db.conn:
            self.db["rules"].upsert_all(({"name": r.name, "family": r.family, "description": r.description,
                                          "target": r.target, "origin": r.origin, "file": r.file}
                                         for r in rules), pk="name")

    def record_mutants(self, problem: str, screened: list[Any], diffs: dict[str, str], arch: str) -> None:
        """Replace one problem's mutants with a freshly screened set, in one transaction."""
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
                "message": s.message or None, "diff": diffs[m.id], "arch": arch, "created": now(),
                "position": m.position, "launches": m.launches, "launch": m.launch,
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

    def rules(self) -> dict[str, dict[str, Any]]:
        """The rule rows the stored mutants refer to, by name."""
        return {r["name"]: r for r in self.db["rules"].rows}

    def mutant(self, mutant_id: str) -> dict[str, Any]:
        """One mutant by id or unique id prefix; StoreError if none or several match."""
        rows = list(self.db["mutants"].rows_where("id like ?", [mutant_id + "%"], limit=2))
        if len(rows) != 1:
            raise StoreError(f"{'no' if not rows else 'more than one'} mutant with id {mutant_id!r}",
                             self.where)
        return rows[0]

    def set_mutant_status(self, mutant_id: str, status: str, message: str | None = None) -> None:
        with self.db.conn:
            self.db["mutants"].update(mutant_id, {"status": status, "message": message})


def _of_level(level: str | None, other: bool = False) -> tuple[str, list[str]]:
    """A `where` clause keeping the mutants of one level's problems, or with `other` those of every
    other level (all without a level)."""
    if level is None:
        return "", []
    return (f"where problem {'not ' if other else ''}like ? escape '\\'",
            [level.replace("_", "\\_").replace("%", "\\%") + "/%"])
