"""How values cross into SQLite: timestamps, and infinities that JSON and SQLite cannot hold."""

from __future__ import annotations

import datetime as dt
import json


def now() -> str:
    """The current UTC time as the store writes it (ISO 8601, seconds)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def finite_or_none(x: float | None) -> float | None:
    """`x`, or None when it is not a finite number: with a non-pass outcome None reads as +inf."""
    return x if x is not None and x == x and abs(x) != float("inf") else None


def margins_json(margins: dict[str, float | None] | None) -> str | None:
    """Margins beyond the columns as the store holds them: JSON, non-finite ones as null; None for none."""
    if not margins:
        return None
    return json.dumps({k: finite_or_none(v) for k, v in sorted(margins.items())})
