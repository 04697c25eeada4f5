"""Checksums of GPU memory: whether a mutant wrote over an input, a weight or the reference, at
the cost of one read of each and no copy.

A copy kept to compare against (and to restore from) doubles the memory of a 6 GB input, costs
two reads per check, and sits in the same device memory a stray write reaches: a mutant that
wrote into the copy made the evaluator "restore" the input from corrupted bits. A checksum lives
on the host, out of reach.

Each 8-byte word w at index i adds mix(w ^ (i * odd)) to a 64-bit sum, mix being splitmix64's
finaliser: a changed or moved word changes the sum, and two changes cancel with chance 2^-64.
The sum is over a tensor's whole storage, so a write anywhere in it counts, including where a
view does not look.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

SOURCE = r"""
typedef unsigned long long u64;

__device__ __forceinline__ u64 kbm_mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 kbm_word(u64 w, u64 i) { return kbm_mix(w ^ (i * 0x9e3779b97f4a7c15ULL)); }

__device__ __forceinline__ u64 kbm_load(const unsigned char* p, int bytes) {
    u64 w = 0;
    for (int b = 0; b < bytes; ++b) w |= (u64)p[b] << (8 * b);
    return w;
}

// One launch for every watched storage: blockIdx.y picks the storage, (address, bytes) in `spans`;
// its sum of kbm_word over 8-byte words, plus the bytes after the last whole word, lands in slots[y].
extern "C" __global__ void kbm_checksums(const long long* spans, long long* slots) {
    const unsigned char* base = (const unsigned char*)spans[2 * blockIdx.y];
    u64 nbytes = (u64)spans[2 * blockIdx.y + 1];
    u64 n = nbytes / 8;
    u64 stride = (u64)blockDim.x * gridDim.x;
    u64 start = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc = 0;
    if (((u64)base & 15) == 0) {  // torch's allocations: 16-byte loads
        const ulonglong2* q = (const ulonglong2*)base;
        for (u64 j = start; j < n / 2; j += stride) {
            ulonglong2 v = q[j];
            acc += kbm_word(v.x, 2 * j) + kbm_word(v.y, 2 * j + 1);
        }
        if (start == 0 && (n & 1)) acc += kbm_word(((const u64*)base)[n - 1], n - 1);
    } else {
        for (u64 i = start; i < n; i += stride) acc += kbm_word(kbm_load(base + 8 * i, 8), i);
    }
    int rest = (int)(nbytes - 8 * n);
    if (start == 0 && rest > 0) acc += kbm_word(kbm_load(base + 8 * n, rest) ^ ((u64)rest << 56), n);
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    __shared__ u64 warps[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warps[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)((blockDim.x + 31) / 32) ? warps[lane] : 0;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd((u64*)&slots[blockIdx.y], acc);
    }
}
"""

BLOCK = 256
BLOCKS_PER_SM = 4
"""Blocks per storage and SM: enough resident warps to saturate memory on one large storage,
few enough that a small one costs little more than the launch."""
MAX_STORAGES = 65535
"""gridDim.y's limit; a model with more tensors is checked in several launches."""


def _kernel() -> tuple[Any, int]:
    """The checksum kernel on the current device, loaded once per process, and its grid width."""
    import torch

    from kbm_toolkit.cuda.kernels import own_kernels

    return own_kernels(SOURCE, "kbm_checksum.cu", torch.cuda.current_device(), BLOCKS_PER_SM)


def storages(tensors: Sequence[Any]) -> list[tuple[int, int]]:
    """(address, bytes) of each distinct storage under `tensors`, in first-seen order."""
    seen: dict[int, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen.setdefault(storage.data_ptr(), storage.nbytes())
    return [(a, n) for a, n in seen.items() if n]


class Watch:
    """Checksums of a fixed set of GPU tensors' storages: taken when built, compared on `changed`."""

    def __init__(self, tensors: Sequence[Any]) -> None:
        import torch

        self.tensors = list(tensors)  # kept alive: the addresses must not be reused
        self.spans = storages(self.tensors)
        self._device = self.tensors[0].device if self.tensors else torch.device("cpu")
        self.sums = self.take()

    @property
    def nbytes(self) -> int:
        """Bytes one check reads: every watched storage once."""
        return sum(n for _, n in self.spans)

    def take(self) -> list[int]:
        """The storages' checksums now (one launch per 65,535 storages, one synchronisation)."""
        import torch

        if not self.spans:
            return []
        if self._device.type != "cuda":
            return [host_checksum(t) for t in _distinct(self.tensors)]
        slots = torch.zeros(len(self.spans), dtype=torch.int64, device=self._device)
        self._launch(slots)
        return _sums(slots)

    def _launch(self, slots: Any) -> None:
        """Queue the checksum kernel on torch's current stream, each storage's sum into its slot (zeroed int64)."""
        import torch

        kernels, width = _kernel()
        # the addresses go to the device afresh each time: kept there, a stray write could reach them too
        spans = torch.tensor(self.spans, dtype=torch.int64).pin_memory().to(self._device, non_blocking=True)
        for first in range(0, len(self.spans), MAX_STORAGES):
            count = min(MAX_STORAGES, len(self.spans) - first)
            kernels.kbm_checksums(spans[first:first + count].reshape(-1), slots[first:first + count],
                                  grid=(width, count), block=BLOCK)

    def changed(self) -> bool:
        """Whether any watched storage's bits differ from when the watch was built."""
        return self.take() != self.sums

    def queue_changed(self, readback: Any) -> Callable[[], bool]:
        """`changed`, its kernel queued on `readback` (`cuda.readback.Readback`) to be read with the
        other parts there; the returned function answers once the readback has run. Off the GPU (or
        with nothing watched) it is answered at once."""
        if not self.spans or self._device.type != "cuda":
            done = self.changed()
            return lambda: done
        index = readback.add(len(self.spans), self._launch)
        return lambda: _sums(readback.host[index]) != self.sums


def _sums(slots: Any) -> list[int]:
    """The checksum kernel's int64 slots as the unsigned sums `Watch` compares."""
    return [v & MASK for v in slots.tolist()]


def _distinct(tensors: Sequence[Any]) -> list[Any]:
    """One tensor per distinct non-empty storage, in `storages`' order."""
    seen: dict[int, Any] = {}
    for t in tensors:
        storage = t.untyped_storage()
        if storage.nbytes():
            seen.setdefault(storage.data_ptr(), t)
    return list(seen.values())


MASK = 0xFFFFFFFFFFFFFFFF


def _host_words(words: Any, first: int) -> int:
    """The sum of the kernel's `kbm_word` over `words` (uint64), the first at index `first`."""
    import numpy as np

    idx = np.arange(first, first + len(words), dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = words ^ (idx * np.uint64(0x9e3779b97f4a7c15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return int((z ^ (z >> np.uint64(31))).sum(dtype=np.uint64))


def host_checksum(t: Any) -> int:
    """The kernel's checksum of `t`'s storage, computed on the host (CPU tensors; the kernel's test)."""
    import numpy as np
    import torch

    storage = t.untyped_storage().cpu()
    raw = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),)).numpy().tobytes()
    n = len(raw) // 8
    total = _host_words(np.frombuffer(raw[:n * 8], dtype=np.uint64), 0)
    rest = raw[n * 8:]
    if rest:  # the bytes after the last whole word, as the kernel folds them: tagged with their count
        tail = int.from_bytes(rest, "little") ^ (len(rest) << 56)
        total += _host_words(np.array([tail], dtype=np.uint64), n)
    return total & MASK
