"""Which CUDA device a GPU worker sees, asked of a worker so that the asking process stays CUDA-free."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.errors import NoDevice
from kbm_toolkit.evaluation.gate import GATE_WORKER
from kbm_toolkit.evaluation.workers import Worker


def describe_device() -> dict[str, Any]:
    """What a GPU worker sees: software versions and the device (`{"cuda": False}` without one)."""
    with Worker(GATE_WORKER) as probe:  # the gate's worker also describes the device it sees
        reply = probe.run({"op": "describe"}, timeout=120)
    return reply.value if reply.status == "ok" else {"cuda": False}


def require_cuda(why: str) -> dict[str, Any]:
    """What a GPU worker sees (`describe_device`); NoDevice with the line `why` when it sees none."""
    env = describe_device()
    if not env.get("cuda"):
        raise NoDevice(why)
    return env
