"""Terminal tables for the gate: compile results, fresh verdicts, and stored ones."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.table import Table

from kbm_toolkit.report import terminal
from kbm_toolkit.store import Store, shipped_store_path

_STYLE = {"passed": "green", "failed": "red", "error": "red", "compile_error": "red", "unrefereeable": "yellow"}


def _margin(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


def print_compile(compiled: list[Any]) -> None:
    """One line per substrate: its image hash and compile time, or the compiler's complaint."""
    table = Table(title="NVRTC compile", title_justify="left")
    for col in ("problem", "image", "ms", "note"):
        table.add_column(col, justify="right" if col == "ms" else "left")
    for c in compiled:
        if c.image is not None:
            ms = "cached" if c.image.cached else f"{c.image.compile_ms:.0f}"
            table.add_row(c.problem.key, c.image.image_hash[:12], ms, c.image.arch)
        else:
            table.add_row(c.problem.key, "[red]-[/red]", "-", f"[red]{c.error}[/red]")
    terminal.console().print(table)


def print_gate_results(results: list[Any], env: dict[str, Any]) -> None:
    """The verdicts of a gate run just made."""
    table = Table(title=f"Gate on {env.get('gpu')} ({env.get('arch')}), tolerance {results[0].tolerance:g}"
                  if results else "Gate", title_justify="left")
    for col in ("problem", "verdict", "worst margin", "inputs", "note"):
        table.add_column(col)
    for r in results:
        ran = [row for row in r.rows if row.outcome != "skipped"]
        ok = sum(row.outcome in ("pass", "fp64-pass", "ceiling") for row in ran)
        skipped = len(r.rows) - len(ran)
        inputs = f"{ok}/{len(ran)}" + (f" (+{skipped} skipped)" if skipped else "")
        style = _STYLE.get(r.status, "")
        table.add_row(r.problem, f"[{style}]{r.status}[/{style}]", _margin(r.worst_margin), inputs,
                      r.message or _skipped_why(r.rows))
    terminal.console().print(table)
    passed = sum(r.status == "passed" for r in results)
    terminal.console().print(f"{passed} of {len(results)} substrates passed the gate.")


def _skipped_why(rows: list[Any]) -> str:
    """Why a gate left inputs out, the commonest reason first: an input the substrate's own
    `substrate.toml` asks for and the reference cannot build tests nothing, and says so here
    (a list-valued size once broke every reference silently)."""
    reasons = Counter(row.note for row in rows if row.outcome == "skipped")
    if not reasons:
        return ""
    why, n = reasons.most_common(1)[0]
    return f"skipped {n}: {why}" + (f" (and {sum(reasons.values()) - n} more)" if len(reasons) > 1 else "")


def stored_gates(store: Any, keys: list[str]) -> tuple[str, list[dict[str, Any]]]:
    """Where the stored verdicts for `keys` come from, and the verdicts: the user's store, else the shipped one."""
    rows = [r for r in store.substrates() if r["problem"] in keys and r["gate_run"] is not None]
    if rows or not shipped_store_path().is_file():
        return f"your store ({store.path})", rows
    shipped = Store(shipped_store_path(), readonly=True)
    return ("the store shipped with kbm",
            [r for r in shipped.substrates() if r["problem"] in keys and r["gate_run"] is not None])


def print_stored_gates(store: Any, keys: list[str]) -> None:
    """Stored verdicts for `keys`: the user's store first, else the shipped one."""
    source, rows = stored_gates(store, keys)
    if not rows:
        terminal.console().print("No stored gate verdicts either; run `kbm gate` on a machine with a GPU.")
        return
    table = Table(title=f"Stored gate verdicts, from {source}", title_justify="left")
    for col in ("problem", "verdict", "worst margin", "tolerance", "GPU", "date"):
        table.add_column(col)
    for r in rows:
        style = _STYLE.get(r["gate_status"], "")
        table.add_row(r["problem"], f"[{style}]{r['gate_status']}[/{style}]", _margin(r["gate_worst_margin"]),
                      f"{r['gate_tolerance']:g}" if r["gate_tolerance"] else "-", r["gate_gpu"] or "-",
                      (r["gate_date"] or "-")[:10])
    terminal.console().print(table)
