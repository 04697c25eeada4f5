"""Runs as a maintainer reads them: what each wrote, how fast, and where its workers' time went."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

TIME_SPLIT = {
    "launches": "mutants' launches (launcher and kernel, synchronised)",
    "crashed": "launches that crashed or hung, until the error came (as the worker timed it) or the deadline",
    "loading": "loading mutants' images into the worker",
    "comparing": "comparing outputs with the references (before 2026-12-02 also checking for overwrites)",
    "checking": "checksums: whether a mutant wrote over its inputs, weights or references (read back with "
                "the comparison: the one wait is split by the two kernels' GPU time)",
    "building": "building models and inputs",
    "references": "running references",
    "rebuilding": "building an input checked before and its references again (after a restart, or an earlier run)",
    "building again": "building an input again in its worker after a mutant wrote over it, and checking it against "
                      "its first build (since 2026-12-03; before, the worker was replaced)",
    "correct": "running the correct kernel",
    "freeing": "handing an input's memory back to the GPU before inputs of other shapes",
    "spares": "waiting for a spare worker to finish starting",
    "building ahead": "a task's wait in its worker for the spare to finish building the input it takes over on "
                      "(since 2026-12-03; before, in `handover`)",
    "handover": "a task's wait in its worker for the pipe: the task sent and unpickled",
    "setting up": "a task's set-up in its worker: the problem, its launcher and the correct kernel's image",
    "planning": "waiting for the next problem to finish compiling",
    "tail": "no problem left while other workers finish",
}
"""The parts of a run's worker time it measures; the rest (pipes, task set-up) is `other`."""

OTHER = "the rest: pipes between worker and parent, task set-up"
"""What the part a run does not measure (`other`) holds."""


def largest_parts(seconds: dict[str, float]) -> list[tuple[float, str]]:
    """A run's stored split as (seconds, part), largest first, without the `wall` total."""
    return sorted(((v, k) for k, v in seconds.items() if k != "wall"), reverse=True)


def seconds_per_crash(parts: dict[str, float]) -> float | None:
    """A problem's crashed seconds over its crashed or hung cells (`runs.stats` per problem); None
    without a crash, or from a run that stored no count. A GPU's fault alone takes about 0.15 s:
    more is a kernel that ran on before its error."""
    return parts["crashed"] / parts["crashes"] if parts.get("crashes") and "crashed" in parts else None


def problem_split(problems: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Each problem's worker time in launches and outside them, its largest part outside, its
    crashed or hung cells (stored since 2026-12-05; None before) and their seconds each from launch
    to error (`seconds_per_crash`): most time outside launches first."""
    rows = []
    for key, parts in problems.items():
        # a problem's parts are TIME_SPLIT's (the run's unmeasured `other` has no problem);
        # its sizes and counts are not time
        outside = {k: v for k, v in parts.items() if k in TIME_SPLIT and k != "launches"}
        largest = max(outside.items(), key=lambda kv: kv[1], default=(None, 0.0))
        rows.append({"problem": key, "launches": parts.get("launches", 0.0), "outside": sum(outside.values()),
                     "largest": largest[0], "largest_s": largest[1], "crashes": parts.get("crashes"),
                     "s_per_crash": seconds_per_crash(parts)})
    return sorted(rows, key=lambda r: (-r["outside"], r["problem"]))


def run_rows(store: Any) -> list[dict[str, Any]]:
    """Every run with its kind, its shard (`kbm run --shard`; None), GPU, dates, what it wrote, its
    wall time and its cells per second."""
    rows = []
    for r in store.runs():
        wall = wall_seconds(r)
        env = json.loads(r["environment"] or "{}")
        rows.append({"run": r["id"], "kind": r["kind"], "shard": env.get("shard"), "gpu": r["gpu"],
                     "started": r["started"],
                     "ended": r["finished"] or r["stopped"], "stopped": bool(r["stopped"] and not r["finished"]),
                     "cells": r["cells"], "checks": r["checks"], "wall_s": wall,
                     "cells_per_s": round(r["cells"] / wall, 1) if wall and r["cells"] else None})
    return rows


def wall_seconds(run: dict[str, Any]) -> float | None:
    """A run's wall time from its stored start and end; None when it recorded no end (killed outright)."""
    end = run["finished"] or run["stopped"]
    if not end or not run["started"]:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(run["started"])).total_seconds()


def time_split(store: Any, run_id: int) -> dict[str, Any]:
    """Where one evaluation's worker time went, as the run measured it (`runs.stats`), by part and by
    problem (`problem_split`), with its spares and the workers it replaced with no crashed cell to say why."""
    run = store.run(run_id)
    stats = json.loads(run["stats"]) if run.get("stats") else {}
    seconds = stats.get("seconds") or {}
    parts = [{"part": k, "seconds": v, "share": v / seconds["wall"] if seconds.get("wall") else None,
              "what": TIME_SPLIT.get(k, OTHER if k == "other" else "")} for v, k in largest_parts(seconds)]
    return {"run": run_id, "kind": run["kind"], "wall_s": wall_seconds(run),
            "workers": json.loads(run["environment"] or "{}").get("workers"),
            "worker_s": seconds.get("wall"), "parts": parts, "restarts": stats.get("restarts"),
            "spares": stats.get("spares"), "replaced": stats.get("replaced") or [],
            "problems": problem_split(stats.get("problems") or {})}
