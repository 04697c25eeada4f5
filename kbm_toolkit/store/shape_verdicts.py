"""Shape verdicts: whether a mutant runs the original's code at the shapes an input builds."""

from __future__ import annotations

from typing import Any, Iterable

from kbm_toolkit.store.base import Tables, chunks
from kbm_toolkit.store.values import now


class ShapeVerdicts(Tables):
    """The `shape_verdicts` table (`kbm equivalence`)."""

    def record_shape_verdicts(self, rows: Iterable[dict[str, Any]], arch: str, nvrtc: str) -> None:
        """Keep verdicts (`mutant`, `shape`, `same`, `note`), replacing earlier ones at the same shape."""
        judged = now()
        with self.db.conn:
            self.db["shape_verdicts"].upsert_all(
                ({**r, "arch": arch, "nvrtc": nvrtc, "judged": judged} for r in rows), pk=("mutant", "shape"))

    def shape_verdicts(self, mutants: Iterable[str] | None = None) -> dict[str, dict[str, int | None]]:
        """mutant -> shape -> same (1), differs (0) or undecided (None), for `mutants` (all: None)."""
        found: dict[str, dict[str, int | None]] = {}
        if mutants is None:
            rows: Iterable[Any] = self.db.execute("select mutant, shape, same from shape_verdicts")
        else:
            rows = (r for part in chunks(mutants) for r in self.db.execute(
                f"select mutant, shape, same from shape_verdicts where mutant in ({','.join('?' * len(part))})", part))
        for mutant, shape, same in rows:
            found.setdefault(mutant, {})[shape] = same
        return found
