"""Runs on the terminal: the list, and one evaluation's worker time by part."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from kbm_toolkit.report import terminal


def print_runs(rows: list[dict[str, Any]]) -> None:
    """One line per run: kind, GPU, start, what it wrote, wall time and throughput."""
    table = Table(title="Runs", title_justify="left")
    for col in ("run", "kind", "GPU", "started", "cells", "checks", "wall", "cells/s"):
        table.add_column(col, justify="right" if col in ("run", "cells", "checks", "wall", "cells/s") else "left")
    for r in rows:
        wall = "-" if r["wall_s"] is None else f"{r['wall_s']:,.0f} s" + (" (stopped)" if r["stopped"] else "")
        kind = (r["kind"] or "-") + (f" {r['shard']}" if r.get("shard") else "")  # e.g. `evaluate 3/8`
        table.add_row(str(r["run"]), kind, r["gpu"] or "-", (r["started"] or "-")[:19].replace("T", " "),
                      f"{r['cells']:,}", f"{r['checks']:,}", wall, "-" if r["cells_per_s"] is None else f"{r['cells_per_s']:g}")
    terminal.console(width=100).print(table)


def print_split(split: dict[str, Any]) -> None:
    """Where one run's worker time went, largest part first."""
    console = terminal.console(width=100)
    if not split["parts"]:
        console.print(f"Run {split['run']} ({split['kind']}) stored no split of its workers' time "
                      "(runs made before the store kept one, schema m010, have none).")
        return
    wall = "?" if split["wall_s"] is None else f"{split['wall_s']:,.0f} s"
    console.print(f"Run {split['run']} ({split['kind']}): {wall} of wall time, {split['workers'] or '?'} workers, "
                  f"{split['worker_s']:,.0f} worker-seconds; {split['restarts'] or 0} restarts.")
    table = Table(title="Where the workers' time went", title_justify="left")
    for col in ("part", "seconds", "share", "what"):
        table.add_column(col, justify="right" if col in ("seconds", "share") else "left")
    for p in split["parts"]:
        table.add_row(p["part"], f"{p['seconds']:,.1f}", "-" if p["share"] is None else f"{p['share']:.1%}", p["what"])
    console.print(table)
    print_problems(console, split.get("problems") or [])
    spares = split.get("spares") or {}
    if spares.get("starts"):
        lent = f" ({spares['borrowed']} lent by another worker on the GPU)" if spares.get("borrowed") else ""
        console.print(f"Workers started: {spares['starts']}, {spares.get('found_warm', 0)} of them warm when needed{lent}; "
                      f"spawn to warm {spares.get('warm_s_median')} s median, {spares.get('warm_s_max')} s at most.")
    for line in replaced_lines(split.get("replaced") or []):
        console.print(line)


PROBLEMS_SHOWN = 10
"""Problems `kbm runs --run N` lists by time outside launches (`--json` has every one)."""


def print_problems(console: Any, problems: list[dict[str, Any]]) -> None:
    """The problems whose workers spent the most time outside launches, and on what."""
    if not problems:
        return
    shown = problems[:PROBLEMS_SHOWN]
    table = Table(title=f"Problems by time outside launches ({len(shown)} of {len(problems)})", title_justify="left")
    for col in ("problem", "launches s", "outside s", "most of it", "crashes", "s per crash"):
        table.add_column(col, justify="left" if col in ("problem", "most of it") else "right")
    for p in shown:
        most = f"{p['largest']} {p['largest_s']:,.1f} s" if p["largest"] else "-"
        table.add_row(p["problem"], f"{p['launches']:,.1f}", f"{p['outside']:,.1f}", most,
                      "-" if p["crashes"] is None else str(p["crashes"]),
                      "-" if p["s_per_crash"] is None else f"{p['s_per_crash']:.2f}")
    console.print(table)


def replaced_lines(replaced: list[dict[str, str]], shown: int | None = None) -> list[str]:
    """Workers replaced with no crashed or hung cell to say why: a count, then each (the first
    `shown`) with its problem, input and reason."""
    if not replaced:
        return []
    lines = [f"Workers replaced with no crashed or hung cell: {len(replaced)}"]
    for r in replaced[:shown]:
        lines.append(f"  {r['problem']}" + (f" input {r['input']}" if r.get("input") else "") + f": {r['note']}")
    if shown is not None and len(replaced) > shown:
        lines.append(f"  and {len(replaced) - shown} more")
    return lines
