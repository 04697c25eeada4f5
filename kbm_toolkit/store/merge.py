"""Merging stores (shards filled on other machines) and copying one safely."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from kbm_toolkit.errors import StoreError
from kbm_toolkit.store.shares import Shares, share_columns

MERGED: list[tuple[str, Any, str | None]] = [
    ("problems", "key", None), ("rules", "name", None), ("substrates", "problem", "gate_run"),
    ("gate_inputs", ("problem", "run", "position"), "run"), ("mutants", "id", None), ("inputs", "id", None),
    ("input_checks", ("input", "substrate_hash"), "run"), ("reference_checks", "input", "run"),
    ("cells", ("mutant", "input"), "run"),
]
"""Tables `Store.merge` copies, in dependency order: (table, primary key, column naming a run)."""


class Merging(Shares):
    """`merge`: every row another store has and this one lacks."""

    def merge(self, other: "Merging") -> dict[str, int]:
        """Copy in the rows of `other` that this store lacks; return rows added per table.

        Runs are re-numbered (and every reference to them follows); a row this store already
        has (same key) is kept as it is, so merging the same store twice adds nothing.
        """
        if other.applied() != self.applied():
            raise StoreError("stores at different schema versions; open both with this kbm first",
                             other.where)
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
            for table, pk, run_column in MERGED:
                if not other.db[table].exists():
                    continue
                before = self.db[table].count
                rows = ({**r, run_column: run_map.get(r[run_column])} if run_column else r
                        for r in other.db[table].rows)
                self.db[table].insert_all(rows, pk=pk, ignore=True, batch_size=2000)
                added[table] = self.db[table].count - before
            for k, f in shares.items():  # the union of two samples is the wider one (samples nest)
                self.db.execute("update problems set sample = :sample, full_rows = :full_rows where key = :key",
                                {**share_columns(f, full.get(k, 0.0)), "key": k})
        return added


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of a store, its latest WAL writes included: SQLite's backup, never a file copy."""
    src, dst = sqlite3.connect(Path(source).resolve().as_uri() + "?mode=ro", uri=True), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
