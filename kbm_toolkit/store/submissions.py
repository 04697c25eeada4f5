"""Submissions: candidate solutions `kbm verify` judged, and their cells on protocols' inputs."""

from __future__ import annotations

from typing import Any, Iterable

from kbm_toolkit.store.base import Tables, chunks
from kbm_toolkit.store.values import finite_or_none, margins_json, now


class Submissions(Tables):
    """The `submissions` and `submission_cells` tables."""

    def record_submissions(self, rows: Iterable[dict[str, Any]], again: bool = False) -> None:
        """Store submissions (a stored one is kept as it is; with `again`, its status and cells are
        cleared, for `kbm verify --again` to measure it anew)."""
        rows = [{**r, "added": now()} for r in rows]
        with self.db.conn:
            if again:
                ids = [(r["id"],) for r in rows]
                self.db.conn.executemany("delete from submission_cells where submission = ?", ids)
                self.db.conn.executemany("delete from submissions where id = ?", ids)
            self.db["submissions"].insert_all(rows, pk="id", ignore=True)

    def set_submission_status(self, submission: str, status: str, note: str | None, run_id: int,
                              load_ms: float | None = None) -> None:
        """What loading a submission's file came to (`vocabulary.SubmissionStatus`)."""
        with self.db.conn:
            self.db["submissions"].update(submission, {"status": status, "note": note, "run": run_id,
                                                       "load_ms": load_ms})

    def record_submission_cells(self, run_id: int, cells: list[dict[str, Any]]) -> None:
        """Commit a batch of a verification's cells; a cell already stored is kept."""
        with self.db.conn:
            self.db["submission_cells"].insert_all(({
                "submission": c["submission"], "input": c["input"], "outcome": c.get("outcome"),
                "margin": finite_or_none(c.get("margin")), "max_abs": finite_or_none(c.get("max_abs")),
                "margins": margins_json(c.get("margins")), "ms": c.get("ms"), "run": run_id, "note": c.get("note"),
                "build_ms": c.get("build_ms"),
            } for c in cells), pk=("submission", "input"), ignore=True)

    def submission_count(self) -> int:
        """How many submissions the store holds."""
        return self.db["submissions"].count if self.db["submissions"].exists() else 0

    def submission_rows(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Stored submissions (those of `ids`, else all), by problem, then path."""
        rows = list(self.db.query("select * from submissions order by problem, path"))
        if ids is None:
            return rows
        wanted = set(ids)
        return [r for r in rows if r["id"] in wanted]

    def input_facts(self, ids: Iterable[str]) -> dict[str, tuple[str, bool | None]]:
        """Input -> (its label, whether kbm's correct substrate passes it: None where no check is stored)."""
        found: dict[str, tuple[str, bool | None]] = {}
        for chunk in chunks(sorted(set(ids))):
            marks = ", ".join("?" * len(chunk))
            for input_id, label, valid in self.db.execute(
                    f"select i.id, i.label, min(k.valid) from inputs i left join input_checks k on k.input = i.id "
                    f"where i.id in ({marks}) group by i.id", chunk).fetchall():
                found[input_id] = (label or input_id, None if valid is None else bool(valid))
        return found

    def submission_cells(self, ids: Iterable[str]) -> dict[tuple[str, str], dict[str, Any]]:
        """(submission, input) -> its stored cell, for the submissions `ids`."""
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for chunk in chunks(sorted(set(ids))):
            marks = ", ".join("?" * len(chunk))
            for r in self.db.query(f"select * from submission_cells where submission in ({marks})", chunk):
                found[(r["submission"], r["input"])] = r
        return found


