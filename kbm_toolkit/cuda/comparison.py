"""How far a candidate output is from the reference, in the terms of KernelBench's allclose.

`torch.allclose(ref, out, atol=t, rtol=t)` passes iff |ref - out| <= t * (1 + |out|) everywhere,
so the margin max |ref - out| / (1 + |out|) decides every tolerance at once: pass iff margin <= t.
Other comparisons (`kbm_toolkit.judging`) ask for their own margins by (scale, ratio).

Two float32 CUDA tensors, contiguous, on the current device, are compared by one kernel that
reads each once (`SOURCE`); everything else by `compare_torch`, the reference implementation,
whose results the kernel reproduces bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kbm_toolkit.vocabulary import Outcome


@dataclass(frozen=True)
class Comparison:
    """Margin and largest absolute error of one output against its reference."""

    outcome: Outcome
    margin: float
    """max |ref - out| / (1 + |out|); +inf for nonfinite, shape, crash and timeout."""
    max_abs: float
    """max |ref - out|, for protocols with an absolute-only tolerance; +inf as above."""
    extra: dict[tuple[str, float], float] = field(default_factory=dict)
    """(scale, ratio) -> max |ref - out| / (1 + ratio * |scale side|), for each one asked for."""

    def passes(self, tolerance: float) -> bool:
        """Whether allclose(atol=rtol=tolerance) accepts this output."""
        return self.margin <= tolerance

    def judged(self, tolerance: float) -> "Comparison":
        """This comparison with `pass` turned into `value` when the margin exceeds `tolerance`."""
        if self.outcome is Outcome.PASS and not self.passes(tolerance):
            return Comparison(Outcome.VALUE, self.margin, self.max_abs, self.extra)
        return self


def failed(outcome: Outcome, extra: Sequence[tuple[str, float]] = ()) -> Comparison:
    """A comparison for an output that never arrived (crash, timeout) or cannot be compared."""
    return Comparison(outcome, math.inf, math.inf, {k: math.inf for k in extra})


def compare(ref: Any, out: Any, extra: Sequence[tuple[str, float]] = ()) -> Comparison:
    """Compare a reference output with a candidate's, as KernelBench's check would; `extra` asks
    for more margins by (scale, ratio), scale `output` or `reference` (see `kbm_toolkit.judging`)."""
    import torch

    if not isinstance(out, torch.Tensor) or not isinstance(ref, torch.Tensor) or ref.shape != out.shape:
        return failed(Outcome.SHAPE, extra)
    if ref.numel() and kernel_takes(ref, out):
        return _compare_kernel(ref, out, extra)
    return compare_torch(ref, out, extra)


def compare_torch(ref: Any, out: Any, extra: Sequence[tuple[str, float]] = ()) -> Comparison:
    """`compare` in torch ops: any dtype, layout and device (the CPU path, and the kernel's reference)."""
    import torch

    if not isinstance(out, torch.Tensor) or not isinstance(ref, torch.Tensor) or ref.shape != out.shape:
        return failed(Outcome.SHAPE, extra)
    with torch.no_grad():
        ref_f, out_f = _as_float(ref), _as_float(out)
        # one synchronisation for the common case, both finite (a worker compares once per cell)
        if not bool(torch.isfinite(ref_f).all() & torch.isfinite(out_f).all()):
            if bool(torch.isnan(ref_f).any()) or bool(torch.isnan(out_f).any()):
                return failed(Outcome.NONFINITE, extra)
            inf_ref, inf_out = torch.isinf(ref_f), torch.isinf(out_f)
            if not bool(torch.equal(inf_ref, inf_out)) or not bool(torch.equal(ref_f[inf_ref], out_f[inf_out])):
                return failed(Outcome.NONFINITE, extra)
            finite = ~inf_ref
            ref_f, out_f = ref_f[finite], out_f[finite]
        if ref_f.numel() == 0:
            return Comparison(Outcome.PASS, 0.0, 0.0, {k: 0.0 for k in extra})
        diff = (ref_f - out_f).abs_()
        largest = diff.max()  # queued before diff is scaled in place
        # the extra margins first: the default one below scales diff in place
        more = [(diff / (out_f if scale == "output" else ref_f).abs().mul_(ratio).add_(1.0)).max()
                for scale, ratio in extra]
        values = torch.stack((largest, *more, diff.div_(out_f.abs().add_(1.0)).max())).tolist()
    return Comparison(Outcome.PASS, values[-1], values[0], dict(zip(extra, values[1:-1])))


def _as_float(t: Any) -> Any:
    import torch

    # allclose compares floats in their own dtype; integers and bools are compared exactly, and
    # float64 keeps int64 indices exact far beyond any tensor size.
    return t if t.is_floating_point() else t.to(torch.float64)


# -- the one-pass kernel ----------------------------------------------------------------------

SOURCE = r"""
// One pass over a float32 reference and candidate: the nonfinite verdict, max |ref - out|, and
// max |ref - out| / (1 + ratio * |s|) for the default margin (ratio 1, s = out) and up to
// KBM_EXTRA others, each rounded as compare_torch's torch ops round it. Every value maximised is
// >= +0 (or a positive NaN), so its int bits order like the float: int max and atomicMax.
#define KBM_EXTRA 8
#define KBM_EXP 0x7f800000

struct KbmAcc {
    int bad;               // a NaN, or an infinity the other side does not equal
    int abs_bits;
    int margin_bits;
    int extra_bits[KBM_EXTRA];
};

// EXTRA false: the common case, no extra margin, compiled without any per-element test of
// n_extra; true: up to KBM_EXTRA of them, n_extra at run time (one loop, not one per count: nine
// inlined copies of the IEEE divisions took NVRTC 8 s instead of 0.6 s).
template <bool EXTRA>
__device__ __forceinline__ void kbm_take(float r, float o, KbmAcc& a, const float (&q)[KBM_EXTRA], int n_extra,
                                         int ref_scaled) {
    if ((__float_as_int(r) & KBM_EXP) == KBM_EXP || (__float_as_int(o) & KBM_EXP) == KBM_EXP) {
        a.bad |= !(r == o);  // NaN equals nothing; equal infinities are left out, as compare_torch does
        return;
    }
    // explicit roundings: NVRTC contracts a * b + c into one FMA, torch's separate ops round twice
    float d = fabsf(__fsub_rn(r, o));
    a.abs_bits = max(a.abs_bits, __float_as_int(d));
    a.margin_bits = max(a.margin_bits, __float_as_int(__fdiv_rn(d, __fadd_rn(fabsf(o), 1.0f))));
    if (!EXTRA) return;
#pragma unroll
    for (int k = 0; k < KBM_EXTRA; ++k) {
        if (k < n_extra) {
            float s = fabsf(((ref_scaled >> k) & 1) ? r : o);
            float m = __fdiv_rn(d, __fadd_rn(__fmul_rn(s, q[k]), 1.0f));
            a.extra_bits[k] = max(a.extra_bits[k], __float_as_int(m));
        }
    }
}

template <bool EXTRA>
__device__ __forceinline__ void kbm_take4(float4 r, float4 o, KbmAcc& a, const float (&q)[KBM_EXTRA], int n_extra,
                                          int ref_scaled) {
    kbm_take<EXTRA>(r.x, o.x, a, q, n_extra, ref_scaled);
    kbm_take<EXTRA>(r.y, o.y, a, q, n_extra, ref_scaled);
    kbm_take<EXTRA>(r.z, o.z, a, q, n_extra, ref_scaled);
    kbm_take<EXTRA>(r.w, o.w, a, q, n_extra, ref_scaled);
}

// Elements [head, head + 4 * nvec) are read as float4 (both pointers 16-byte aligned there), the
// rest one by one; a grid-stride loop with 64-bit indices, so any size runs in a bounded grid.
template <bool EXTRA>
__device__ __forceinline__ void kbm_scan(const float* __restrict__ ref, const float* __restrict__ out, long long n,
                                         long long head, long long nvec, const float (&q)[KBM_EXTRA],
                                         int n_extra, int ref_scaled, KbmAcc& a) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* r4 = reinterpret_cast<const float4*>(ref + head);
    const float4* o4 = reinterpret_cast<const float4*>(out + head);
    long long i = start;
    // two float4 of each tensor in flight per thread; streaming loads, each byte is read once
    for (; i + stride < nvec; i += 2 * stride) {
        float4 ra = __ldcs(r4 + i), oa = __ldcs(o4 + i);
        float4 rb = __ldcs(r4 + i + stride), ob = __ldcs(o4 + i + stride);
        kbm_take4<EXTRA>(ra, oa, a, q, n_extra, ref_scaled);
        kbm_take4<EXTRA>(rb, ob, a, q, n_extra, ref_scaled);
    }
    if (i < nvec) kbm_take4<EXTRA>(__ldcs(r4 + i), __ldcs(o4 + i), a, q, n_extra, ref_scaled);
    for (long long j = start; j < head; j += stride) kbm_take<EXTRA>(ref[j], out[j], a, q, n_extra, ref_scaled);
    for (long long j = head + 4 * nvec + start; j < n; j += stride)
        kbm_take<EXTRA>(ref[j], out[j], a, q, n_extra, ref_scaled);
}

__device__ __forceinline__ int kbm_warp_max(int v) {
    for (int off = 16; off > 0; off >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

// result: [bad, max_abs bits, margin bits]; extra: n_extra margins' bits, for ratios q0..q7, bit
// k of ref_scaled set where extra margin k scales by the reference. Both start zeroed.
extern "C" __global__ void __launch_bounds__(256, 4) kbm_compare(
        const float* __restrict__ ref, const float* __restrict__ out, long long n, long long head,
        long long nvec, int n_extra, int ref_scaled, float q0, float q1, float q2, float q3, float q4,
        float q5, float q6, float q7, int* result, int* extra) {
    const float q[KBM_EXTRA] = {q0, q1, q2, q3, q4, q5, q6, q7};
    KbmAcc a;
    a.bad = 0;
    a.abs_bits = 0;
    a.margin_bits = 0;
#pragma unroll
    for (int k = 0; k < KBM_EXTRA; ++k) a.extra_bits[k] = 0;
    if (n_extra == 0) kbm_scan<false>(ref, out, n, head, nvec, q, 0, ref_scaled, a);
    else kbm_scan<true>(ref, out, n, head, nvec, q, n_extra, ref_scaled, a);

    // block reduction: warp shuffles, then the first warp over the warps' values, one atomic each
    __shared__ int warps[8][3 + KBM_EXTRA];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    const int bad = __syncthreads_or(a.bad);
    int v[3 + KBM_EXTRA];
    v[0] = 0;
    v[1] = a.abs_bits;
    v[2] = a.margin_bits;
#pragma unroll
    for (int k = 0; k < KBM_EXTRA; ++k) v[3 + k] = a.extra_bits[k];
#pragma unroll
    for (int k = 1; k < 3 + KBM_EXTRA; ++k) {
        if (k < 3 + n_extra) {
            const int m = kbm_warp_max(v[k]);
            if (lane == 0) warps[warp][k] = m;
        }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int k = 1; k < 3 + KBM_EXTRA; ++k) {
            if (k < 3 + n_extra) {
                const int m = kbm_warp_max(lane < nwarps ? warps[lane][k] : 0);
                if (lane == 0) atomicMax(k < 3 ? result + k : extra + (k - 3), m);
            }
        }
        if (lane == 0 && bad) atomicOr(result, 1);
    }
}
"""

ENTRY = "kbm_compare"
BLOCK = 256
"""Threads per block; the source's shared array and `__launch_bounds__` assume it."""
BLOCKS_PER_SM = 4
"""1024 resident threads per SM, each with four 16-byte loads in flight: enough to keep HBM busy,
and `__launch_bounds__(256, 4)` caps the registers so that every block of the grid is resident."""
EXTRA_PER_LAUNCH = 8
"""Extra margins one launch computes (the source's KBM_EXTRA); more take another pass each 8."""
WHERE = "kbm_toolkit/cuda/comparison.py"


def kernel_takes(ref: Any, out: Any) -> bool:
    """Whether the kernel takes this pair: float32, contiguous, on the current CUDA device."""
    import torch

    return (ref.dtype == torch.float32 and out.dtype == torch.float32 and ref.is_cuda and out.is_cuda
            and ref.device == out.device and ref.device.index == torch.cuda.current_device()
            and ref.is_contiguous() and out.is_contiguous()
            and ref.data_ptr() % 4 == 0 and out.data_ptr() % 4 == 0)


def split(n: int, ref_ptr: int, out_ptr: int) -> tuple[int, int]:
    """(head, nvec): the kernel reads elements [head, head + 4 * nvec) as float4, the rest alone."""
    if ref_ptr % 16 != out_ptr % 16:
        return n, 0  # no offset aligns both: element by element (a view sliced at an odd offset)
    head = min(n, (-ref_ptr % 16) // 4)
    return head, (n - head) // 4


def launch_arguments(ref: Any, out: Any, head: int, nvec: int, chunk: Sequence[tuple[str, float]],
                     result: Any, extra: Any) -> tuple:
    """The kernel's arguments for one launch over `chunk` (at most EXTRA_PER_LAUNCH extra margins)."""
    ratios = [float(r) for _, r in chunk] + [0.0] * (EXTRA_PER_LAUNCH - len(chunk))
    ref_scaled = sum(1 << k for k, (scale, _) in enumerate(chunk) if scale != "output")
    return (ref, out, ref.numel(), head, nvec, len(chunk), ref_scaled, *ratios, result, extra)


def _loaded(device: int) -> tuple[Any, int]:
    """The comparison kernel on `device`, loaded once per process, and its grid width."""
    from kbm_toolkit.cuda.kernels import own_kernels

    return own_kernels(SOURCE, WHERE, device, BLOCKS_PER_SM)


def _slots(extra: Sequence[tuple[str, float]]) -> int:
    """int32 slots the kernel writes for one comparison: [bad, max_abs, margin, extras...], a slot of
    1 keeping the extras' pointer valid when none is asked."""
    return 3 + max(1, len(extra))


def _launch_kernel(ref: Any, out: Any, extra: list[tuple[str, float]], result: Any) -> None:
    """Queue the one-pass kernel over (ref, out) on torch's current stream, into `result` (zeroed int32 slots)."""
    kernels, width = _loaded(ref.device.index)  # the current device: kernel_takes checked it
    head, nvec = split(ref.numel(), ref.data_ptr(), out.data_ptr())
    grid = max(1, min(width, -(-max(nvec, ref.numel() - 4 * nvec) // BLOCK)))
    for first in range(0, max(1, len(extra)), EXTRA_PER_LAUNCH):
        chunk = extra[first:first + EXTRA_PER_LAUNCH]
        args = launch_arguments(ref, out, head, nvec, chunk, result[:3], result[3 + first:])
        kernels.launch(ENTRY, args, grid, BLOCK)


def _read_kernel(host: Any, extra: list[tuple[str, float]]) -> Comparison:
    """The Comparison from the kernel's slots, copied to the host (int32)."""
    import torch

    if host[0]:
        return failed(Outcome.NONFINITE, extra)
    values = host[1:].view(torch.float32).tolist()
    return Comparison(Outcome.PASS, values[1], values[0], dict(zip(extra, values[2:])))


def _compare_kernel(ref: Any, out: Any, extra: Sequence[tuple[str, float]]) -> Comparison:
    """`compare` by the one-pass kernel, on torch's current stream, with one synchronisation."""
    import torch

    extra = list(extra)
    result = torch.zeros(_slots(extra), dtype=torch.int32, device=ref.device)
    _launch_kernel(ref, out, extra, result)
    return _read_kernel(result.cpu(), extra)


def queue_compare(readback: Any, ref: Any, out: Any, extra: Sequence[tuple[str, float]] = ()) -> Callable[[], Comparison]:
    """`compare`, its kernel queued on `readback` (`cuda.readback.Readback`) to be read with the
    other parts there; the returned function gives the Comparison once the readback has run. Pairs
    the kernel does not take are compared at once, by `compare`."""
    import torch

    extra = list(extra)
    if not (isinstance(ref, torch.Tensor) and isinstance(out, torch.Tensor) and ref.shape == out.shape
            and ref.numel() and kernel_takes(ref, out)):
        done = compare(ref, out, extra)
        return lambda: done
    slots = _slots(extra)
    index = readback.add(-(-slots // 2), lambda words: _launch_kernel(ref, out, extra, words.view(torch.int32)[:slots]))
    return lambda: _read_kernel(readback.host[index].view(torch.int32)[:slots], extra)
