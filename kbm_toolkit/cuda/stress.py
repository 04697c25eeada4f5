"""Memory stress beside each mutant launch on a stressed input: for races no input reaches.

The synchronization mutants no input witnesses mostly give the correct kernel's output on every
input (a removed barrier whose race never shows under the GPU's usual schedule). Memory stress
(Sorensen and Donaldson's way of exposing GPU weak-memory behaviour) varies the schedule instead
of the input: beside the launch, on a side stream, one block per SM does scattered
read-modify-writes over a scratch buffer until the launch is done, so loads take uneven time and
the warps of a block drift apart, as a barrier exists to prevent.

An input spec that names `stress = "memory"` (`problems.input_spec`) has every launch on it run
so, a mutant's or a submission's: another input, with its own cells, which a protocol lists like
any other (`kernelbench-stress`: the official trials, then the same trials stressed). The correct
kernel's input checks run unstressed.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

SOURCE = r"""
// Scattered read-modify-writes over `scratch` (n floats) until *done reaches `gen`, or `fuse_ns`
// nanoseconds have gone by (a stop that cannot come, because something the launch does waits
// for the whole GPU to drain, must not hold the launch up for long); a block that stops by the
// fuse counts itself in *fused.
__device__ __forceinline__ unsigned long long kbm_now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void kbm_stress(float* scratch, long long n, const long long* done, long long gen,
                                      long long fuse_ns, int* fused) {
    unsigned long long x = ((unsigned long long)(blockIdx.x * blockDim.x + threadIdx.x) + 1) * 0x9e3779b97f4a7c15ULL;
    volatile const long long* seen = done;
    const unsigned long long began = kbm_now_ns();
    while (*seen < gen) {
        for (int k = 0; k < 32; ++k) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            long long j = (long long)((x >> 20) % (unsigned long long)n);
            scratch[j] += 1.0f;
        }
        if (kbm_now_ns() - began > (unsigned long long)fuse_ns) {
            if (threadIdx.x == 0) atomicAdd(fused, 1);
            break;
        }
    }
}

extern "C" __global__ void kbm_stress_stop(long long* done, long long gen) { *done = gen; }
"""

WHERE = "kbm_stress.cu"
SCRATCH_FLOATS = 64 * 2**20
"""256 MiB: past the H200's 60 MiB L2, so the stress reaches DRAM."""
BLOCK = 128
FUSE_NS = 1_000_000_000
"""The longest a stress block runs without its stop: 1 s, well inside a launch's 7 s deadline
(`driver.mutant_deadline_s`), so a stop held up costs time, not a timed-out cell. The launch's
kernels are loaded before the stress starts (`LoadedKernel.preload`): under lazy loading a kernel's
first launch may wait for the GPU to drain, the likely reason (not yet confirmed) every stressed
launch of the first run, the control family's too, overran its deadline."""


class MemoryStress:
    """Queues the stress before a launch (`start`) and its end after it (`stop`), per process.

    Each launch has a generation: the stress runs until the counter on the GPU reaches it, and
    the stop, queued behind the launch on its stream, sets it. Nothing waits on the side stream,
    so the stress is under way before the launch's stream reaches the launch."""

    def __init__(self) -> None:
        import torch

        from kbm_toolkit.cuda.kernels import own_kernels

        self._torch = torch
        self._kernels, self._grid = own_kernels(SOURCE, WHERE, torch.cuda.current_device(), 1)
        self._kernels.preload()  # the stop's first launch would otherwise wait for the stress it stops
        self._scratch = torch.zeros(SCRATCH_FLOATS, dtype=torch.float32, device="cuda")
        self._done = torch.zeros(1, dtype=torch.int64, device="cuda")
        self._fused = torch.zeros(1, dtype=torch.int32, device="cuda")
        self._side = torch.cuda.Stream()
        self._gen = 0

    def start(self) -> None:
        """Queue the next generation's stress on the side stream."""
        self._gen += 1
        with self._torch.cuda.stream(self._side):
            self._kernels.kbm_stress(self._scratch, SCRATCH_FLOATS, self._done, self._gen, FUSE_NS,
                                     self._fused, grid=self._grid, block=BLOCK)

    def stop(self) -> None:
        """Queue the end of this generation's stress on the current stream, behind the launch."""
        self._kernels.kbm_stress_stop(self._done, self._gen, grid=1, block=1)

    def fused(self) -> int:
        """Stress blocks, over every generation so far, that stopped by the fuse, not by their stop
        (waits for the GPU)."""
        self._torch.cuda.synchronize()
        return int(self._fused.item())


_stress: list[Any] = []


def around_launch(spec_stress: str = "") -> MemoryStress | None:
    """This process's stress (made at the first call) when the input's spec names one, else None."""
    if not spec_stress:  # the one stress there is (`input_spec.STRESSES`): memory
        return None
    if not _stress:
        _stress.append(MemoryStress())
    return _stress[0]


@contextmanager
def beside(stress: MemoryStress | None) -> Iterator[None]:
    """Queue what the block launches beside `stress` (`around_launch`'s; None: plainly): its start
    before, its stop after, and no stop where the launch's own CUDA error killed the context, and
    the stress with it (the launch's error is what the cell records)."""
    if stress is None:
        yield
        return
    stress.start()
    try:
        yield
    finally:
        try:
            stress.stop()
        except Exception:  # noqa: BLE001
            pass
