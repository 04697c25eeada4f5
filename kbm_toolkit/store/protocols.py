"""Protocols a store carries: those its runs were given by path, as their protocol.toml text."""

from __future__ import annotations

from kbm_toolkit.store.base import Tables
from kbm_toolkit.store.values import now


class StoredProtocols(Tables):
    """The `protocols` table."""

    def record_protocol(self, name: str, toml: str, source: str) -> None:
        """Keep protocol `name`'s protocol.toml text (from `source`, a path), replacing an earlier one
        that differs (the same text keeps the record of where and when it came first)."""
        if self.protocol_toml(name) == toml:
            return
        with self.db.conn:
            self.db["protocols"].upsert({"name": name, "toml": toml, "source": source, "recorded": now()},
                                        pk="name")

    def protocol_toml(self, name: str) -> str | None:
        """Stored protocol `name`'s protocol.toml text, or None."""
        row = self.db.execute("select toml from protocols where name = ?", [name]).fetchone()
        return row[0] if row else None

    def protocol_names(self) -> list[str]:
        """The stored protocols' names."""
        return [r[0] for r in self.db.execute("select name from protocols order by name")]
