"""The store: one SQLite file (WAL) that holds every result; reports are queries over it.

`Store` is the one object the rest of kbm talks to. Each of its parts is a module of its own:
the schema (`schema`), runs (`runs`), the pool of problems, substrates and mutants (`pool`), the
kill matrix (`kill_matrix`), the submissions `kbm verify` judged (`submissions`), evaluated shares
(`shares`), the shape verdicts `kbm equivalence` makes (`shape_verdicts`) and merging (`merge`).
Its schema changes only through the ordered migrations in `schema`, each applied in a
transaction together with its record in `_kbm_migrations`, so applying twice is harmless.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from kbm_toolkit.errors import StoreError
from kbm_toolkit.store.kill_matrix import KillMatrix
from kbm_toolkit.store.merge import Merging
from kbm_toolkit.store.pool import Pool
from kbm_toolkit.store.protocols import StoredProtocols
from kbm_toolkit.store.runs import Runs
from kbm_toolkit.store.schema import MIGRATIONS
from kbm_toolkit.store.shape_verdicts import ShapeVerdicts
from kbm_toolkit.store.submissions import Submissions
from kbm_toolkit.store.values import now


class Store(Runs, Pool, KillMatrix, Submissions, StoredProtocols, ShapeVerdicts, Merging):
    """A kbm store at `path` (`:memory:` for tests); opening applies pending migrations.

    `readonly` opens it for reading only (an older schema is upgraded in memory); a reading
    command passes `create=False` so that a path with no store is an error, not a new file.
    """

    def __init__(self, path: str | Path, readonly: bool = False, create: bool = True) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self.readonly = readonly
        if self.path is not None and not self.path.is_file() and (readonly or not create):
            # a reading command never makes a store (nor its folder) where it was told to read one
            raise StoreError("no kbm store here (kbm gate, mutate, run and merge create one)", path)
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

    def scratch_copy(self) -> "Store":
        """An in-memory copy of this store: what is written to it (a dry run's planning) goes nowhere."""
        copy = Store(":memory:")
        self.db.conn.backup(copy.db.conn)
        return copy

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
        """How many migrations the store has had."""
        return len(self.applied())

    def _check_known(self) -> None:
        known = {name for name, _ in MIGRATIONS}
        unknown = [n for n in self.applied() if n not in known]
        if unknown:
            raise StoreError(f"written by a newer kbm (migration {unknown[0]}); upgrade kbm to read it",
                             self.where)

    def migrate(self) -> list[str]:
        """Apply pending migrations; return their names."""
        self._check_known()
        done = []
        for name, fn in MIGRATIONS:
            if name in set(self.applied()):
                continue
            with self.db.conn:
                fn(self.db)
                self.db["_kbm_migrations"].insert({"name": name, "applied": now()}, pk="name")
            done.append(name)
        return done

    def close(self) -> None:
        """Close the database."""
        self.db.close()
