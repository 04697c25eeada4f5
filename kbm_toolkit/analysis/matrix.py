"""The kill matrix as scoring reads it: per problem, its scored mutants, input checks and cells."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem, problem_from_row
from kbm_toolkit.vocabulary import SAME_CODE, STOPPING_OUTCOMES


@dataclass
class Matrix:
    """One problem's slice of the store: its distinct mutants, input checks and cells."""

    problem: Problem
    mutants: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, Any]]
    cells: dict[tuple[str, str], tuple[str, float | None]]
    """(mutant, input) -> (outcome, margin); all of them, or only those that can kill (see load_matrices)."""
    evaluated: dict[str, int] = field(default_factory=dict)
    """Input -> how many of the mutants have a cell on it (passing or not)."""
    present: dict[str, set[str]] = field(default_factory=dict)
    """Input -> the mutants with a cell on it, for inputs some mutant lacks (with quiet cells unloaded,
    `cells` alone cannot tell a gap from a quiet cell)."""
    details: dict[tuple[str, str], tuple[float | None, dict[str, float | None]]] | None = None
    """(mutant, input) -> (max_abs, other margins) for the cells loaded, when loaded with `details`:
    what judging at another atol/rtol ratio or against another reference reads (`judged`)."""
    verdicts: dict[str, dict[str, int | None]] = field(default_factory=dict)
    """Mutant -> shape (`InputSpec.shape_key`) -> `kbm equivalence`'s verdict there (`SAME_CODE`:
    the original's machine code), for the mutants judged anywhere."""
    _columns: dict[str, dict[str, tuple[str, float | None]]] | None = field(default=None, repr=False)
    _killed: dict[tuple[str, float], set[str]] = field(default_factory=dict, repr=False)
    _stopped: set[str] | None = field(default=None, repr=False)
    _shapes: dict[str, str] = field(default_factory=dict, repr=False)
    _proven: dict[str, set[str]] | None = field(default=None, repr=False)

    def shape_of(self, input_id: str) -> str:
        """The shapes a stored input builds (`InputSpec.shape_key`), read from its spec once."""
        if input_id not in self._shapes:
            self._shapes[input_id] = InputSpec.from_record(json.loads(self.checks[input_id]["spec"])).shape_key
        return self._shapes[input_id]

    @property
    def proven(self) -> dict[str, set[str]]:
        """Input -> the mutants without a cell on it that run the original's machine code at its
        shapes (`kbm equivalence`): their outcome is the correct kernel's, so no cell is missing there
        (a run does not launch them). Only inputs some mutant lacks a cell on can have any."""
        if self._proven is None:
            self._proven = {}
            gaps = [i for i in self.checks if self.evaluated.get(i, 0) < len(self.mutants)] if self.verdicts else []
            for i in gaps:
                have, shape = self.present.get(i, set()), self.shape_of(i)
                found = {m for m, v in self.verdicts.items() if v.get(shape) == SAME_CODE and m not in have}
                if found:
                    self._proven[i] = found
        return self._proven

    @property
    def stopped(self) -> set[str]:
        """Mutants with a crash or a timeout: runs stop them there, so their other cells may be absent."""
        if self._stopped is None:
            self._stopped = {m for (m, _), (outcome, _) in self.cells.items() if outcome in STOPPING_OUTCOMES}
        return self._stopped

    def missing(self, input_id: str, excused: set[str]) -> set[str]:
        """Mutants with no cell on the input, leaving out those in `excused` (e.g. already detected,
        so no cell can change their verdict)."""
        if self.evaluated.get(input_id, 0) >= len(self.mutants):
            return set()
        have = self.present.get(input_id, set()) | self.proven.get(input_id, set())
        return {m for m in self.mutants if m not in have and m not in excused}

    def column(self, input_id: str) -> dict[str, tuple[str, float | None]]:
        """The cells of one input, by mutant."""
        if self._columns is None:
            columns: dict[str, dict[str, tuple[str, float | None]]] = defaultdict(dict)
            for (m, i), cell in self.cells.items():
                columns[i][m] = cell
            self._columns = dict(columns)
        return self._columns.get(input_id, {})

    def killed(self, input_id: str, t: float) -> set[str]:
        """Mutants the input kills at tolerance t; once per input and tolerance, as the protocols
        share most inputs."""
        if (input_id, t) not in self._killed:
            self._killed[(input_id, t)] = {m for m, cell in self.column(input_id).items() if killed(cell, t)}
        return self._killed[(input_id, t)]


def load_matrices(store: Any, floor: float | None = None, full_rows: bool = False,
                  sample: float | None = None, details: bool = True) -> list[Matrix]:
    """Every refereeable problem that has distinct mutants, with what the store knows about it.

    A problem evaluated on a sample (`kbm run --sample`) holds only its sampled mutants; with
    `full_rows`, only those evaluated without `--first-kill` (what set cover needs); with
    `sample`, at most that share (samples nest, so a wider store reproduces a narrower one). With
    `floor`, cells that pass with a margin at or under it are left out: they kill at no tolerance
    >= floor (`Store.matrix_rows`). With `details`, every margin a cell has is loaded too (and
    decides what the floor leaves out): what protocols judging otherwise than allclose at
    atol = rtol against strict fp32 need.
    """
    rows = store.matrix_rows(floor, full_rows, sample, details)
    verdicts = store.shape_verdicts()
    return [Matrix(problem_from_row(key, r["problem"]), r["mutants"], r["checks"], r["cells"], r["evaluated"],
                   r["present"], r["details"] if details else None,
                   {m: verdicts[m] for m in r["mutants"] if m in verdicts})
            for key, r in rows.items()]


def valid_at(check: dict[str, Any] | None, t: float) -> bool:
    """Whether an input check says the input is valid at tolerance `t` (the correct kernel passes)."""
    return bool(check and check["valid"] and check["margin"] is not None and check["margin"] <= t)


def killed(cell: tuple[str, float | None], t: float) -> bool:
    """Whether a cell (outcome, margin) kills its mutant at tolerance t."""
    outcome, margin = cell
    return outcome != "pass" or margin is None or margin > t
