"""The probe protocol's one input per problem: the shape `kbm run` screens each mutant on."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.errors import SubstrateError
from kbm_toolkit.problems.substrate import substrate_for


def probe_input(problem: Any, constants: dict[str, Any], config: dict[str, Any]) -> list[dict[str, Any]]:
    """One input-spec record: the official draw of the first trial at the substrate's probe shape
    (none for a problem without a substrate: nothing of it was screened)."""
    try:
        shape = substrate_for(problem).probe_shape
    except SubstrateError:
        return []
    return [{"shape": shape or {}, "label": "probe"}]

