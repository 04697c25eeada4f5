"""Which CUDA device a GPU worker sees, asked of a worker so that the asking process stays CUDA-free."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.evaluation.workers import Worker

DESCRIBE_WORKER = "kbm_toolkit.evaluation.gate_task:worker_task"


def describe_device() -> dict[str, Any]:
    """What a GPU worker sees: software versions and the device (`{"cuda": False}` without one)."""
    with Worker(DESCRIBE_WORKER) as probe:
        reply = probe.run({"op": "describe"}, timeout=120)
    return reply.value if reply.status == "ok" else {"cuda": False}
