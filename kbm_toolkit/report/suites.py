"""The budget curve of `kbm suite` on the terminal."""

from __future__ import annotations

import click

from kbm_toolkit.analysis.suite import SuiteCurve


def print_curve(curve: SuiteCurve, tolerance: float, baseline: str, splits: int) -> None:
    """Detection per budget, on the full pool and held out, against the baseline protocol."""
    click.echo(f"Denominator: {curve.denominator_words(tolerance, baseline)}.")
    click.echo("budget       " + "  ".join(f"B = {b:<4}" for b in curve.budgets) + f"  {baseline}")
    click.echo("full pool    " + "  ".join(f"{x:7.1f}%" for x in curve.full) + f"  {curve.baseline_full:.1f}%")
    click.echo("held-out     " + "  ".join(f"{x:7.1f}%" for x in curve.held_out) + f"  {curve.baseline_held_out:.1f}%")
    if splits:
        click.echo(f"{f'  mean of {splits}':<13}" + "  ".join(f"{sum(x) / len(x):7.1f}%" for x in curve.held_out_splits))
        click.echo("  range      " + "  ".join(f"{f'{min(x):.0f}–{max(x):.0f}%':>8}" for x in curve.held_out_splits))
