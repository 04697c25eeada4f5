"""What every part of the store shares: the open database, and where it lives."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

import sqlite_utils

BOUND_PARAMETERS = 500
"""Ids bound in one `in (...)` query, well under SQLite's limit on bound parameters."""


def chunks(items: Iterable[str], size: int = BOUND_PARAMETERS) -> Iterator[list[str]]:
    """`items` in lists of at most `size`, for queries that bind each list."""
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i:i + size]


class Tables:
    """The open SQLite database a store's parts query (`Store` is all of them together)."""

    db: sqlite_utils.Database
    path: Path | None
    readonly: bool

    def _has(self, table: str, pk: Any) -> bool:
        """Whether `table` has a row with primary key `pk`."""
        try:
            self.db[table].get(pk)
            return True
        except sqlite_utils.db.NotFoundError:
            return False

    def problem_rows(self) -> dict[str, dict[str, Any]]:
        """Every stored problem's row, by key."""
        return {r["key"]: r for r in self.db["problems"].rows}

    @property
    def where(self) -> str:
        """The store's path for messages (`:memory:` for an in-memory one)."""
        return str(self.path) if self.path else ":memory:"
