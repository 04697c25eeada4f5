"""What a mutation campaign made, counted like the paper's Table 1: in total, by family, by rule."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbm_toolkit.vocabulary import MutantStatus

if TYPE_CHECKING:  # screening compiles with NVRTC: a summary is read where CUDA is not
    from kbm_toolkit.mutation.screening import Screened

STAGES = ("generated", MutantStatus.COMPILE_ERROR.value, MutantStatus.DUPLICATE.value, MutantStatus.EQUIVALENT.value,
          MutantStatus.DISTINCT.value)
"""The columns of the pipeline summary: generated, then what screening made of them."""


@dataclass
class MutationSummary:
    """Counts shaped like the paper's Table 1, in total, by family and by rule."""

    problems: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    by_family: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    by_rule: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    rule_family: dict[str, str] = field(default_factory=dict)

    def add(self, screened: list[Screened]) -> None:
        """Count one problem's screened mutants."""
        for s in screened:
            for bucket in (self.by_family[s.mutant.family], self.by_rule[s.mutant.rule]):
                bucket["generated"] += 1
                bucket[s.status] += 1

    @property
    def total(self) -> Counter:
        """The counts over every family."""
        out: Counter = Counter()
        for c in self.by_family.values():
            out.update(c)
        return out
