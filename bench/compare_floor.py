"""How close `compare`'s one-pass kernel comes to the cost of reading both tensors once.

For each size, on fp32 tensors of that many elements (a reference and a candidate a little off
it), times three things, median of --repeats runs, each ended by torch.cuda.synchronize:

  floor    a trivial kernel in this file that reads both tensors once (16-byte loads, the same
           grid and result read-back as compare's kernel) and sums them: what no comparison beats
  kernel   `kbm_toolkit.cuda.comparison.compare`, the one-pass kernel
  torch    `compare_torch`, the torch ops compare used before (several passes, two temporaries)

    python bench/compare_floor.py [--numel N ...] [--repeats 7] [--extra reference:0.13,output:100]

The default sizes are the element counts of the five largest outputs in the KernelBench pool
(1_610_612_736 is level1/19 ReLU and others, 6.4 GB in fp32): defaults only, --numel replaces
them; nothing is read from a store. GB is one tensor's size (each run reads two). A size of
which two tensors do not fit in free GPU memory is skipped with a line, and the torch column
reads `oom` where its temporaries do not fit. The last line is the worst kernel/floor ratio over
the sizes measured (the goal is at most 1.3x); every row also checks that the kernel's
Comparison equals the torch path's (`same`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbm_toolkit.cuda.comparison import BLOCK, compare, compare_torch, split  # noqa: E402

POOL_LARGEST = [1_610_612_736, 1_073_741_824, 805_306_368, 536_870_912, 402_653_184]
"""Element counts of the five largest outputs of the KernelBench pool (the defaults)."""

FLOOR = r"""
extern "C" __global__ void __launch_bounds__(256, 4) floor_read(
        const float* __restrict__ a, const float* __restrict__ b, long long n, long long head, long long nvec,
        float* sum) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* a4 = reinterpret_cast<const float4*>(a + head);
    const float4* b4 = reinterpret_cast<const float4*>(b + head);
    float acc = 0.0f;
    long long i = start;
    for (; i + stride < nvec; i += 2 * stride) {  // the load pattern of compare's kernel
        float4 x = __ldcs(a4 + i), y = __ldcs(b4 + i), z = __ldcs(a4 + i + stride), w = __ldcs(b4 + i + stride);
        acc += x.x + x.y + x.z + x.w + y.x + y.y + y.z + y.w + z.x + z.y + z.z + z.w + w.x + w.y + w.z + w.w;
    }
    if (i < nvec) {
        float4 x = __ldcs(a4 + i), y = __ldcs(b4 + i);
        acc += x.x + x.y + x.z + x.w + y.x + y.y + y.z + y.w;
    }
    for (long long j = start; j < head; j += stride) acc += a[j] + b[j];
    for (long long j = head + 4 * nvec + start; j < n; j += stride) acc += a[j] + b[j];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);  // kept, so that no load is dead
}
"""


def floor_kernel() -> tuple[Any, int]:
    """The floor kernel, loaded, and compare's grid width on this device."""
    import torch

    from kbm_toolkit.cuda.comparison import BLOCKS_PER_SM
    from kbm_toolkit.cuda.kernels import own_kernels

    return own_kernels(FLOOR, "bench/compare_floor.py", torch.cuda.current_device(), BLOCKS_PER_SM)


def read_once(kernels: Any, width: int, a: Any, b: Any) -> float:
    """Both tensors read once by the floor kernel, its sum read back (one synchronisation)."""
    import torch

    n = a.numel()
    head, nvec = split(n, a.data_ptr(), b.data_ptr())
    grid = max(1, min(width, -(-max(nvec, n - 4 * nvec) // BLOCK)))
    total = torch.zeros(1, device=a.device)
    kernels.floor_read(a, b, n, head, nvec, total, grid=grid, block=BLOCK)
    return float(total.cpu())


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of `fn` in ms, one warm-up first, each run bracketed by synchronize."""
    import torch

    fn()
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def parse_extra(text: str) -> list[tuple[str, float]]:
    """`reference:0.13,output:100` -> [("reference", 0.13), ("output", 100.0)]."""
    pairs = []
    for part in filter(None, text.split(",")):
        scale, ratio = part.split(":")
        pairs.append((scale, float(ratio)))
    return pairs


def measure(n: int, extra: list[tuple[str, float]], repeats: int, floor: tuple[Any, int]) -> dict:
    """floor, kernel and torch ms on one pair of n-element tensors (freed on return); torch None on OOM."""
    import torch

    ref = torch.randn(n, device="cuda")
    out = torch.randn(n, device="cuda").mul_(1e-3).add_(ref)  # no third tensor for the noise
    row: dict = {"floor": median_ms(lambda: read_once(*floor, ref, out), repeats),
                 "kernel": median_ms(lambda: compare(ref, out, extra), repeats), "torch": None, "same": None}
    try:
        row["torch"] = median_ms(lambda: compare_torch(ref, out, extra), repeats)
        row["same"] = compare(ref, out, extra) == compare_torch(ref, out, extra)
    except torch.cuda.OutOfMemoryError:
        pass  # the torch path's temporaries did not fit beside the two tensors
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--numel", type=int, nargs="+", default=POOL_LARGEST,
                    help="element counts (default: the pool's five largest)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--extra", type=parse_extra, default=[],
                    help="extra margins to ask for, e.g. reference:0.13,output:100")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench/compare_floor.py needs a CUDA GPU: it times kernels that read GPU memory")
    floor = floor_kernel()
    compare(torch.zeros(4, device="cuda"), torch.zeros(4, device="cuda"))  # compile and load outside the timings
    print(f"{'numel':>14} {'GB':>6} {'floor ms':>9} {'kernel ms':>10} {'torch ms':>9} {'kernel/floor':>13} "
          f"{'torch/kernel':>13}  same", flush=True)
    worst = None
    for n in args.numel:
        free, _ = torch.cuda.mem_get_info()
        if free < 2 * 4 * n + (1 << 28):
            print(f"{n:>14} skipped: two fp32 tensors need {8 * n / 1e9:.1f} GB, {free / 1e9:.1f} GB free", flush=True)
            continue
        row = measure(n, args.extra, args.repeats, floor)
        torch.cuda.empty_cache()
        ratio = row["kernel"] / row["floor"]
        worst = ratio if worst is None else max(worst, ratio)
        torch_ms = f"{row['torch']:9.2f}" if row["torch"] is not None else f"{'oom':>9}"
        speedup = f"{row['torch'] / row['kernel']:12.2f}x" if row["torch"] is not None else f"{'-':>13}"
        same = {None: "-", True: "yes", False: "NO"}[row["same"]]
        print(f"{n:>14} {4 * n / 1e9:6.2f} {row['floor']:9.2f} {row['kernel']:10.2f} {torch_ms} {ratio:12.2f}x "
              f"{speedup}  {same}", flush=True)
    if worst is None:
        raise SystemExit("no size fit in free GPU memory")
    print(f"worst kernel/floor: {worst:.2f}x (goal: at most 1.30x)")


if __name__ == "__main__":
    main()
