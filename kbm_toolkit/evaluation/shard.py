"""`kbm run --shard K/N`: one of N disjoint parts of a run, for a batch scheduler to run apart.

Each shard runs on its own copy of the pool store; `kbm merge` folds the copies back (every
shard's cells, checks, quarantines and shares). The unit is a whole problem: the evaluator is
input-major per problem (a task builds each input of a problem once, its reference and the
correct kernel, then runs every mutant on it), so splitting a problem's mutants across shards
would build and check its inputs once per shard, and one problem's cells all come from one
machine.

Problems are dealt round-robin in the order `run_evaluation` runs them (sha256 of the key): that
order is random with respect to a problem's size and level, so each shard gets an equal count
(within one) and, in expectation, equal work, and it depends only on the problems selected,
never on what the store has evaluated. Every copy of one pool selects the same problems (the
ones it has mutants for), so shard K of N is the same set on every machine, and a shard run
again on its own store resumes from its own cells.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Sequence, TypeVar

from kbm_toolkit.errors import OptionError
from kbm_toolkit.problems.problem import Problem

P = TypeVar("P", bound=Problem)

_SHAPE = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*")


def run_order(key: str) -> str:
    """Where a problem comes in a run: the sha256 of its key (a run stopped early has covered a
    random subset of problems, not the first level's matmuls)."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (`index` in 0..count-1)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """`K/N` as `kbm run --shard` takes it; OptionError (a usage error) for anything else."""
        match = _SHAPE.fullmatch(text)
        if not match:
            raise OptionError(f"--shard takes K/N, shard K of N counted from 0 (e.g. 0/8); not {text!r}")
        index, count = int(match[1]), int(match[2])
        if count < 1:
            raise OptionError(f"--shard {text}: N is the number of shards, at least 1")
        if index >= count:
            raise OptionError(f"--shard {text}: K counts from 0, so shard K of {count} is 0 to {count - 1}")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def of(self, problems: Sequence[P]) -> list[P]:
        """This shard's problems, in run order."""
        ordered = sorted(problems, key=lambda p: run_order(p.key))
        return ordered[self.index::self.count]
