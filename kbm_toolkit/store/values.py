"""How values cross into SQLite: timestamps, and infinities that JSON and SQLite cannot hold."""

from __future__ import annotations

import datetime as dt


def now() -> str:
    """The current UTC time as the store writes it (ISO 8601, seconds)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def finite_or_none(x: float | None) -> float | None:
    """`x`, or None when it is not a finite number: with a non-pass outcome None reads as +inf."""
    return x if x is not None and x == x and abs(x) != float("inf") else None
