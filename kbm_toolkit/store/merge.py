"""Merging stores (shards filled on other machines) and copying one safely."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from kbm_toolkit.errors import StoreError
from kbm_toolkit.store.shares import Shares, share_columns

MERGED: list[tuple[str, Any, str | tuple[str, ...] | None]] = [
    ("problems", "key", None), ("rules", "name", None), ("substrates", "problem", "gate_run"),
    ("gate_inputs", ("problem", "run", "position"), "run"), ("mutants", "id", None), ("inputs", "id", None),
    ("input_checks", ("input", "substrate_hash"), "run"), ("reference_checks", "input", "run"),
    ("cells", ("mutant", "input"), "run"),
    ("superseded_cells", ("mutant", "input", "superseded_by"), ("run", "superseded_by")),
    ("submissions", "id", "run"), ("submission_cells", ("submission", "input"), "run"),
    ("protocols", "name", None), ("shape_verdicts", ("mutant", "shape"), None),
]
"""Tables `Store.merge` copies, in dependency order: (table, primary key, the columns naming a run)."""

REMEASURED = (("substrates", "problem", "gate_run"), ("input_checks", ("input", "substrate_hash"), "run"),
              ("reference_checks", "input", "run"))
"""Tables whose rows a later run writes again in place (a cell measured again keeps a record of the
one it replaced, `superseded_cells`): (table, primary key, the column naming the run)."""


class Merging(Shares):
    """`merge`: every row another store has and this one lacks."""

    def merge(self, other: "Merging") -> dict[str, int]:
        """Copy in the rows of `other` that this store lacks; return rows added per table.

        Runs are re-numbered (and every reference to them follows); a row this store already
        has (same key) is kept as it is, but for what a later run of `other`'s changed in place
        (a quarantine, a cell measured again, a gate or check made again, a protocol recorded
        again), which is applied; merging the same store twice adds nothing.
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
                columns = (run_column,) if isinstance(run_column, str) else run_column or ()
                rows = ({**r, **{c: run_map.get(r[c]) for c in columns}} for r in other.db[table].rows)
                self.db[table].insert_all(rows, pk=pk, ignore=True, batch_size=2000)
                added[table] = self.db[table].count - before
            for k, f in shares.items():  # the union of two samples is the wider one (samples nest)
                self.db.execute("update problems set sample = :sample, full_rows = :full_rows where key = :key",
                                {**share_columns(f, full.get(k, 0.0)), "key": k})
            # what an evaluation changes in rows both stores had already (a shard's copy of the pool):
            # keeping this store's row as it is would lose it
            changed = {"quarantined mutants": self._merge_quarantines(other),
                       "checks given margins": self._merge_check_margins(other),
                       "cells measured again": self._merge_redone(other, run_map),
                       "gates and checks made again": self._merge_remeasured(other, run_map),
                       "problems refereed": self._merge_refereed(other),
                       "protocols recorded again": self._merge_protocols(other)}
            added.update({what: n for what, n in changed.items() if n})
        return added

    def _merge_quarantines(self, other: "Merging") -> int:
        """Mutants `other` quarantined (on the probe input) that are distinct here: quarantined here
        too, as one run would leave them. Quarantine is one-way: no run makes a mutant distinct again."""
        rows = other.db.execute("select id, message from mutants where status = 'quarantined'").fetchall()
        before = self.db.conn.total_changes
        self.db.conn.executemany("update mutants set status = 'quarantined', message = ? "
                                 "where id = ? and status = 'distinct'", [(message, m) for m, message in rows])
        return self.db.conn.total_changes - before

    def _merge_redone(self, other: "Merging", run_map: dict[int, int]) -> int:
        """Cells `other` measured again in place (`superseded_cells`) where this store still holds
        the cell they superseded: replaced here too, as the redo would have replaced them."""
        if not other.db["superseded_cells"].exists():
            return 0
        rows = other.db.execute(
            "select c.outcome, c.margin, c.max_abs, c.ms, c.run, c.note, c.margins, s.mutant, s.input, s.run "
            "from superseded_cells s join cells c on c.mutant = s.mutant and c.input = s.input "
            "where c.run = s.superseded_by").fetchall()
        before = self.db.conn.total_changes
        self.db.conn.executemany(
            "update cells set outcome = ?, margin = ?, max_abs = ?, ms = ?, run = ?, note = ?, margins = ? "
            "where mutant = ? and input = ? and run = ?",
            [(*r[:4], run_map.get(r[4]), *r[5:9], run_map.get(r[9])) for r in rows])
        return self.db.conn.total_changes - before

    def _merge_remeasured(self, other: "Merging", run_map: dict[int, int]) -> int:
        """Gates and input checks `other` made again in place (`kbm gate` again, a check of an input
        whose reference raised) by a run that began after this store's row's: replaced here too."""
        started = {i: s or "" for i, s in self.db.execute("select id, started from runs").fetchall()}
        before = self.db.conn.total_changes
        for table, pk, run_column in REMEASURED:
            keys = (pk,) if isinstance(pk, str) else pk
            where = " and ".join(f"{k} = ?" for k in keys)
            for row in other.db[table].rows:
                own = self.db.execute(f"select {run_column} from {table} where {where}",
                                      [row[k] for k in keys]).fetchone()
                theirs = run_map.get(row[run_column])
                if own is not None and theirs != own[0] and started.get(theirs, "") > started.get(own[0], ""):
                    values = {c: v for c, v in row.items() if c not in keys} | {run_column: theirs}
                    self.db.execute(f"update {table} set {', '.join(f'{c} = ?' for c in values)} where {where}",
                                    [*values.values(), *(row[k] for k in keys)])
        return self.db.conn.total_changes - before

    def _merge_refereed(self, other: "Merging") -> int:
        """What `other` learnt of a problem this store has not judged (whether its reference can be
        refereed, its module constants): copied in; what this store recorded stays."""
        before = self.db.conn.total_changes
        self.db.conn.executemany(
            "update problems set refereeable = ?, reason = ? where key = ? and refereeable is null",
            other.db.execute("select refereeable, reason, key from problems where refereeable is not null").fetchall())
        self.db.conn.executemany(
            "update problems set constants = ? where key = ? and constants is null",
            other.db.execute("select constants, key from problems where constants is not null").fetchall())
        return self.db.conn.total_changes - before

    def _merge_protocols(self, other: "Merging") -> int:
        """Protocols `other` recorded again after this store did (their inputs regenerated): theirs replace."""
        before = self.db.conn.total_changes
        self.db.conn.executemany(
            "update protocols set toml = ?, source = ?, recorded = ? where name = ? and recorded < ?",
            [(t, s, r, n, r) for n, t, s, r in other.db.execute("select name, toml, source, recorded from protocols")])
        return self.db.conn.total_changes - before

    def _merge_check_margins(self, other: "Merging") -> int:
        """Margins `other` has for an input check this store has without them (added by a run of
        `other`'s, `Store.add_check_margins`): added here, this store's own kept where both have one."""
        theirs = other.db.execute("select input, substrate_hash, margins from input_checks "
                                  "where margins is not null").fetchall()
        mine = {(i, h): json.loads(m or "{}") for i, h, m in self.db.execute(
            "select input, substrate_hash, margins from input_checks").fetchall()}
        changed = []
        for i, h, margins in theirs:
            own = mine.get((i, h))
            if own is not None and not set(json.loads(margins)) <= set(own):
                changed.append((json.dumps(dict(sorted({**json.loads(margins), **own}.items()))), i, h))
        self.db.conn.executemany("update input_checks set margins = ? where input = ? and substrate_hash = ?", changed)
        return len(changed)


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of a store, its latest WAL writes included: SQLite's backup, never a file copy."""
    src, dst = sqlite3.connect(Path(source).resolve().as_uri() + "?mode=ro", uri=True), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
