"""Runs: each gate, evaluation or check a store records, with its provenance and what it measured."""

from __future__ import annotations

import json
import socket
from typing import Any

from kbm_toolkit.errors import StoreError
from kbm_toolkit.store.base import Tables
from kbm_toolkit.store.values import now


class Runs(Tables):
    """The `runs` table."""

    def start_run(self, kind: str, env: dict[str, Any]) -> int:
        """Record the start of a run with its provenance; return its id."""
        with self.db.conn:
            table = self.db["runs"].insert({
                "kind": kind, "started": now(), "kbm": env.get("kbm"), "host": socket.gethostname(),
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
        values: dict[str, Any] = {column: now()}
        if stats is not None:
            values["stats"] = json.dumps(stats, sort_keys=True)
        with self.db.conn:
            self.db["runs"].update(run_id, values)

    def run(self, run_id: int) -> dict[str, Any]:
        """One run's row; StoreError when the store has no such run."""
        if not self._has("runs", run_id):
            raise StoreError(f"no run {run_id} (`kbm runs` lists them)", self.where)
        return self.db["runs"].get(run_id)

    def latest_run(self) -> int:
        """The id of the newest run (0 when there is none)."""
        return int(self.db.execute("select coalesce(max(id), 0) from runs").fetchone()[0])

    def run_after(self, before: int) -> tuple[int, int] | None:
        """(id, cells stored) of the newest run begun after run `before`, or None."""
        row = self.db.execute("select id, (select count(*) from cells where run = runs.id) from runs "
                              "where id > ? order by id desc limit 1", [before]).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with how many cells (a `kbm verify` run's: submission cells) and
        input checks it wrote."""
        return list(self.db.query(
            "select r.*, (select count(*) from cells c where c.run = r.id) "
            "+ (select count(*) from submission_cells s where s.run = r.id) as cells, "
            "(select count(*) from input_checks k where k.run = r.id) as checks from runs r order by r.id"))

    def cell_provenance(self) -> list[dict[str, Any]]:
        """Per GPU, the first and last start and the number of the runs that wrote cells."""
        return list(self.db.query(
            "select r.gpu, min(r.started) as first, max(r.started) as last, count(distinct r.id) as runs "
            "from runs r where r.id in (select distinct run from cells) group by r.gpu"))
