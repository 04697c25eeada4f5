"""Shares: how much of each problem's mutant pool a store has evaluated, and with full rows.

`kbm run --sample F` evaluates a nested, hash-drawn share of each problem's mutants
(`sampling.in_sample`); `--first-kill` evaluates mutants without full rows. Every score is over
what these record.
"""

from __future__ import annotations

from typing import Any

from kbm_toolkit.store.base import Tables
from kbm_toolkit.store.sampling import in_sample


def share_columns(sample: float, full: float) -> dict[str, float | None]:
    """A problem's `sample` and `full_rows` columns for these shares (empty: all, and the whole sample)."""
    return {"sample": None if sample >= 1.0 else sample, "full_rows": None if full >= sample else full}


class Shares(Tables):
    """The `sample` and `full_rows` columns of the `problems` table."""

    def widen_sample(self, problem: str, fraction: float | None, full_rows: bool = True,
                     inputs: set[str] | None = None) -> None:
        """Record that `problem` is evaluated on `fraction` of its mutants (None: all), never
        narrowing; `full_rows=False` (`kbm run --first-kill`) leaves the share with full rows as it was.

        A run without first kills over `inputs` (None: every input) fills full rows only where the
        mutants past the share with full rows have no cells on other inputs: a first-kill row over
        inputs this run did not give stays partial (a probe-only run on a pool, say).
        A problem with cells but no recorded share was evaluated in full before shares existed.
        """
        current = self._evaluated_share(problem).get(problem)
        if current is None and not self._has("problems", problem):
            return
        wanted = max(current or 0.0, 1.0 if fraction is None else fraction)
        full = self.full_rows().get(problem, current or 0.0)
        if full_rows and (inputs is None or not self._partial_rows_past(problem, full, inputs)):
            full = max(full, wanted)
        with self.db.conn:
            self.db["problems"].update(problem, share_columns(wanted, full))

    def _partial_rows_past(self, problem: str, full: float, inputs: set[str]) -> bool:
        """Whether a mutant of `problem` outside the share `full` has a cell on an input not in `inputs`."""
        rows = self.db.execute("select distinct c.mutant, c.input from cells c join mutants m on m.id = c.mutant "
                               "where m.problem = ?", [problem])
        return any(i not in inputs and not in_sample(m, full) for m, i in rows)

    def _full_share(self) -> dict[str, float]:
        """Problem -> share of its mutants evaluated with full rows (1.0: all), for evaluated problems."""
        narrower = self.full_rows()
        return {k: narrower.get(k, f) for k, f in self._evaluated_share().items()}

    def full_rows(self) -> dict[str, float]:
        """Problem -> the share of its mutants with full rows, where it is narrower than its sample."""
        return {r[0]: r[1] for r in self.db.execute("select key, full_rows from problems where full_rows is not null")}

    def _evaluated_share(self, problem: str | None = None) -> dict[str, float]:
        """Problem -> share of its mutants evaluated so far (1.0: all), for problems with cells or a share."""
        rows = self.db.execute("select p.key, p.sample from problems p where (:k is null or p.key = :k) and ("
                               "p.sample is not null or exists(select 1 from mutants m join cells c "
                               "on c.mutant = m.id where m.problem = p.key))", {"k": problem})
        return {k: 1.0 if f is None else f for k, f in rows}

    def evaluated_problems(self) -> set[str]:
        """Problems with cells, or with a share recorded by a sampled run."""
        return set(self._evaluated_share())

    def sample_summary(self, at_most: float | None = None) -> dict[str, Any] | None:
        """How much of the pool a sampled store evaluates, or is scored on when capped `at_most` a
        share (None when every problem is evaluated in full)."""
        if not self.samples() and (at_most is None or at_most >= 1.0):
            return None
        # every evaluated problem, those a wider run took to the whole pool (share 1.0) too
        shares = {k: min(f, 1.0 if at_most is None else at_most) for k, f in self._evaluated_share().items()}
        if not shares:
            return None
        rows = self.db.execute("select id, problem from mutants where status = 'distinct'").fetchall()
        pool = [(m, p) for m, p in rows if p in shares]
        begun = [f for f in shares.values() if f > 0]
        # an interrupted wider run leaves some problems a share ahead: the report says so
        return {"share": max(shares.values()), "least": min(begun, default=0.0), "problems": len(begun),
                "problems_at": [[f, begun.count(f)] for f in sorted(set(begun))],
                "mutants": sum(in_sample(m, shares[p]) for m, p in pool), "distinct": len(pool)}

    def fill_shares(self, keys: list[str]) -> dict[str, float | None]:
        """The share of each problem's mutants to evaluate when filling missing cells (None: all):
        its own where evaluated, else the store's widest share."""
        shares = self.samples()
        begun = {k for k, f in shares.items() if f == 0}  # a first run stopped before finishing them
        evaluated = self.evaluated_problems() - begun
        widest = max((f for f in shares.values() if f > 0), default=None)
        return {k: shares.get(k) if k in evaluated else widest for k in keys}

    def samples(self) -> dict[str, float]:
        """Problem -> the share of its mutants evaluated, for problems evaluated on a sample only."""
        return {r[0]: r[1] for r in self.db.execute("select key, sample from problems where sample is not null")}
