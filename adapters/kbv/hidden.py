"""kbv's hidden tests: KernelBench-Verified's published ones with a checkout, kbm's reconstruction without.

With `KBM_KBV` naming a checkout (`kbm --kbv PATH`), a problem's hidden inputs are exactly the
configs of its `hidden_tests/level{L}/{id}_hidden.py`, less those `filtered_configs.json` drops:
each is `get_hidden_inputs()` called under the official draw's trial seed 5 (upstream draws them
from the running RNG after the five trials, without reseeding; kbm seeds so a spec stands alone)
and taken at its index. A problem KBV has no file for gets the official trials alone, as KBV's
eval does. Without a checkout, and always for `kbv-reconstructed`, they are kbm's reconstruction:
config k is the official draw under trial seed 5 + k with floats scaled by 1, 3, 0.01 or -1.
"""

from __future__ import annotations

from typing import Any

from kbm_toolkit.problems.hidden_tests import KBV_ENV, kbv_checkout, read_hidden

SCALES = (1.0, 3.0, 0.01, -1.0)
"""The factors of KBV's distributions D1..D4 (`scripts/generate_hidden_inputs.py`)."""

HIDDEN_SEED_INDEX = 5
"""The trial seed after the official five: the seed every published hidden config is drawn under."""


def hidden_specs(problem: Any, constants: dict[str, Any], config: dict[str, Any]) -> list[dict[str, Any]]:
    """Input-spec records of `problem`'s hidden tests: published or reconstructed, per `config["hidden"]`."""
    checkout = kbv_checkout() if config.get("hidden", "published") == "published" else None
    if checkout is None:
        return reconstructed()
    tests = read_hidden(checkout, problem)
    if tests is None:
        return []
    return [{"seed_index": HIDDEN_SEED_INDEX, "base": "kbv-hidden", "label": c.label,
             "hidden": {"config": c.index, "sha256": tests.sha256}} for c in tests.kept]


def reconstructed() -> list[dict[str, Any]]:
    """kbm's reconstruction: trial seed 5 + k, floats scaled by the k-th factor (the ids the shipped stores hold)."""
    return [{"seed_index": HIDDEN_SEED_INDEX + k, "transforms": [{"op": "scale", "by": by}], "label": f"hidden x{by:g}"}
            for k, by in enumerate(SCALES)]


def describe(config: dict[str, Any]) -> str | None:
    """What the audit says first about these hidden tests: where they come from."""
    if config.get("hidden", "published") != "published":
        return None
    checkout = kbv_checkout()
    if checkout is None:
        return (f"kbv-reconstructed: no KernelBench-Verified checkout (--kbv PATH or {KBV_ENV}), "
                "so its hidden tests are kbm's reconstruction")
    return f"kbv: the hidden tests KernelBench-Verified publishes, from {checkout / 'hidden_tests'}"
