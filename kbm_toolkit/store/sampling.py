"""Which mutants a sampled store evaluates: a fixed, nested draw by mutant id."""

from __future__ import annotations


def in_sample(mutant: str, fraction: float | None) -> bool:
    """Whether a mutant is in the deterministic `fraction` sample of its pool (None: everything).

    Ids are hashes, so their leading bits are uniform: a sample is a random draw, and a larger
    fraction holds every mutant of a smaller one (samples nest, so runs can widen one).
    """
    return fraction is None or fraction >= 1.0 or int(mutant[:8], 16) < fraction * 16**8
