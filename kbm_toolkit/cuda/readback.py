"""Several of kbm's own kernels writing into one device buffer, read back in one copy.

A cell's comparison and its overwrite check are each a launch and a read-back; apart, each waits
for the GPU once. Where workers share a GPU, each wait can also be a wait for the other worker's
time slice. Queued here, both run back to back on torch's current stream and the host waits once.

Each part asks for a number of 64-bit words and a function that launches its kernel into them
(zeroed); `run` launches every part in order, copies the buffer to the host, and gives each part
its words and the GPU time its kernel took (CUDA events around it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Part:
    """One kernel's share of the buffer: how many words, and how to launch into them."""

    words: int
    launch: Callable[[Any], None]


class Readback:
    """Parts queued for one launch-and-copy (`add`, then `run`)."""

    def __init__(self, device: str = "cuda") -> None:
        self.device = device
        """Where the buffer lives: the current CUDA device, or the CPU where a test emulates the kernels."""
        self.parts: list[Part] = []
        self.host: list[Any] = []
        """After `run`: each part's words on the host (int64), in the order added."""
        self.gpu_ms: list[float] = []
        """After `run`: each part's kernel time on the GPU, in milliseconds."""

    def add(self, words: int, launch: Callable[[Any], None]) -> int:
        """Queue a part; its index, for `host` and `gpu_ms` after `run`."""
        self.parts.append(Part(words, launch))
        return len(self.parts) - 1

    def run(self) -> None:
        """Launch every part into one zeroed buffer, then copy it back: one synchronisation (none
        without parts: off the GPU, each part was answered as it was queued)."""
        import torch

        if not self.parts:
            return
        buffer = torch.zeros(sum(p.words for p in self.parts), dtype=torch.int64, device=self.device)
        timed = buffer.is_cuda
        events = [torch.cuda.Event(enable_timing=True) for _ in range(len(self.parts) + 1)] if timed else []
        if timed:
            events[0].record()
        spans, at = [], 0
        for i, part in enumerate(self.parts):
            spans.append(slice(at, at + part.words))
            part.launch(buffer[spans[-1]])
            if timed:
                events[i + 1].record()
            at += part.words
        host = buffer.cpu()  # waits for every part's kernel, and the events with them
        self.host = [host[span] for span in spans]
        self.gpu_ms = ([start.elapsed_time(end) for start, end in zip(events, events[1:])] if timed
                       else [0.0] * len(self.parts))
