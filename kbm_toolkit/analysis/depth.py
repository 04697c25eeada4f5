"""Whole networks against single operators (the paper's §7: Table 5 and Fig. 7).

For a protocol: how many distinct mutants survive it (it detects none of their faults) and how
many witnessed ones it misses, at operator scale (levels 1–2) and at architecture scale (level 3);
per architecture against its launch count; and per quartile of depth, from the launch each
placed mutant runs at (`mutation.positions`). Witnesses are the audit's: every denominator
protocol's detections in strict fp32.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.analysis.matrix import Matrix
from kbm_toolkit.analysis.score import scored
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.vocabulary import QUARTILES, Accounting, depth_quartile

ARCHITECTURE_LEVEL = "level3"
"""KernelBench's whole networks; its other levels are single operators and small fusions."""


@dataclass
class Survival:
    """Distinct mutants and those a protocol does not detect; witnessed ones and those it misses."""

    distinct: int = 0
    survived: int = 0
    witnessed: int = 0
    missed: int = 0

    def add(self, other: "Survival") -> None:
        """Fold another count into this one."""
        self.distinct += other.distinct
        self.survived += other.survived
        self.witnessed += other.witnessed
        self.missed += other.missed

    @property
    def survival_pct(self) -> float | None:
        """Distinct mutants the protocol does not detect, in %."""
        return 100.0 * self.survived / self.distinct if self.distinct else None

    @property
    def miss_pct(self) -> float | None:
        """Witnessed mutants the protocol misses, in %."""
        return 100.0 * self.missed / self.witnessed if self.witnessed else None


@dataclass
class Architecture:
    """One network: its official forward's launch count and its mutants' survival, whole and by quartile."""

    problem: str
    launches: int | None
    survival: Survival = field(default_factory=Survival)
    quartiles: list[Survival] = field(default_factory=lambda: [Survival() for _ in range(QUARTILES)])


@dataclass
class Depth:
    """`depth`'s answer for one protocol."""

    protocol: str
    operator: Survival
    """Levels other than level 3."""
    architecture: Survival
    networks: list[Architecture]
    quartiles: list[Survival]
    """Placed mutants of every network, by quartile of depth (0: the input end)."""


def depth(protocol: Protocol, matrices: list[Matrix], denominator: list[Protocol],
          accounting: Accounting = Accounting.TOLERANCE) -> Depth:
    """Survival and misses of `protocol` at both scales, per network, and by depth; misses over
    its audit's denominator."""
    mine, _, wit = scored(protocol, matrices, denominator, accounting=accounting)
    operator, architecture = Survival(), Survival()
    networks: list[Architecture] = []
    quartiles = [Survival() for _ in range(QUARTILES)]
    for mx in matrices:
        key = mx.problem.key
        detected, seen = mine.detected.get(key, set()), wit.get(key, set())
        if mx.problem.level != ARCHITECTURE_LEVEL:
            operator.add(_count(mx.mutants, detected, seen))
            continue
        net = Architecture(key, max((m.get("launches") or 0 for m in mx.mutants.values()), default=0) or None)
        net.survival = _count(mx.mutants, detected, seen)
        for m_id, m in mx.mutants.items():
            if m.get("launches"):
                net.quartiles[depth_quartile(m["position"], m["launches"])].add(_count({m_id: m}, detected, seen))
        for q in range(QUARTILES):
            quartiles[q].add(net.quartiles[q])
        architecture.add(net.survival)
        networks.append(net)
    return Depth(protocol.name, operator, architecture, networks, quartiles)


def _count(mutants: dict[str, Any], detected: set[str], seen: set[str]) -> Survival:
    ids = set(mutants)
    return Survival(len(ids), len(ids - detected), len(ids & seen), len((ids & seen) - detected))
