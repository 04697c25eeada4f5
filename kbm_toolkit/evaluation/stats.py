"""What a run reports of itself: its summary, how its workers' children started, and where its
workers' time went (`TIME_SPLIT`'s parts, as the store's `runs.stats` keeps them)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from kbm_toolkit.evaluation.workers import Worker
from kbm_toolkit.vocabulary import RecordKind


@dataclass
class RunSummary:
    """What `run_evaluation` did: cells committed, restarts, quarantines, each problem's verdict."""

    cells: int = 0
    restarts: int = 0
    waited_s: float = 0.0
    """Time the GPU workers spent waiting for a child to finish starting (no warm spare left)."""
    spares: dict[str, Any] = field(default_factory=dict)
    """How the workers' children started: how many, how many were warm when put to work, the
    median and slowest seconds from spawn to warm (too few spares, or too slow to warm), and the
    median of each part of the warm-up (`spare_stats`)."""
    quarantined: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    """Where the workers' time went (`TIME_SPLIT` keys, in worker-seconds), as the run stores it."""
    compared_bytes: int = 0
    """Bytes the cells' comparisons read (outputs and references): `comparing`'s floor, at the
    GPU's read bandwidth."""
    planned: dict[str, int] = field(default_factory=dict)
    """A dry run's plan (`RunOptions.dry_run`): the `problems` with work left, the `mutants` a run
    would compile, its `cells` on checked valid inputs, and the `unchecked` inputs it would check
    first, with `cells_unchecked` at most on them (only where the check passes)."""
    replaced: list[dict[str, str]] = field(default_factory=list)
    """Workers replaced with no crashed or hung cell to say why (a CUDA error outside a launch, an
    input built again that differed): each `{"problem", "input", "note"}`."""


RECORD_MS = {RecordKind.CELL: {"ms": "launches", "load_ms": "loading", "compare_ms": "comparing",
                               "check_ms": "checking", "crash_ms": "crashed"},
             RecordKind.INPUT: {"build_ms": "building", "ref_ms": "references", "kernel_ms": "correct"},
             RecordKind.REBUILT: {"build_ms": "rebuilding", "ref_ms": "rebuilding"},
             RecordKind.MARGINS: {"kernel_ms": "correct"}}
"""Per record kind, its milliseconds fields and the `TIME_SPLIT` part each is charged to."""


def spare_stats(workers: list[Worker]) -> dict[str, Any]:
    """Children started by `workers`, how many were warm when put to work (and of those, how many a
    sibling lent), how many spares died unused, the warm-up times, and each part of the warm-up's median."""
    warm = sorted(t for w in workers for t in w.warm_s)
    parts: dict[str, list[float]] = {}
    for w in workers:
        for child in w.warm_parts:
            for part, s in child.items():
                parts.setdefault(part, []).append(s)
    return {"starts": len(warm), "found_warm": sum(w.found_warm for w in workers),
            "lost": sum(w.spares_lost for w in workers), "borrowed": sum(w.borrowed for w in workers),
            "warm_s_median": round(statistics.median(warm), 2) if warm else None,
            "warm_s_max": round(warm[-1], 2) if warm else None,
            "warm_parts_median": {part: round(statistics.median(v), 2) for part, v in parts.items()}}


def split_seconds(seconds: dict[str, float], summary: RunSummary, began: float, finished: list[float],
                  workers: int) -> dict[str, float]:
    """The run's worker time by `TIME_SPLIT` part, with `wall` (workers x wall time since `began`) and `other`."""
    end = time.monotonic()
    parts = {**seconds, "spares": summary.waited_s, "tail": sum(end - f for f in finished)}
    parts["wall"] = (end - began) * workers
    parts["other"] = parts["wall"] - sum(v for k, v in parts.items() if k != "wall")
    return {k: round(v, 3) for k, v in parts.items()}
