"""`compare`: the torch path's semantics on hand-computed cases, and the one-pass kernel against it.

The CPU tests pin what `compare_torch` returns (and how it rounds); the GPU tests require the
kernel to return exactly what `compare_torch` returns on the same CUDA tensors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kbm_toolkit.cuda.comparison import (BLOCK, ENTRY, EXTRA_PER_LAUNCH, SOURCE, WHERE, Comparison, compare,
                                         compare_torch, kernel_takes, launch_arguments, split)
from kbm_toolkit.cuda.launch_checks import check_launch
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.cuda.signatures import entry_points
from kbm_toolkit.vocabulary import Outcome

INF, NAN = math.inf, math.nan


def q32(a: float, b: float) -> float:
    """a / b in float32 (one rounding, not the float64 quotient rounded again)."""
    return float(np.float32(a) / np.float32(b))


# -- the torch path, on the CPU ------------------------------------------------------------------

def test_margins_by_hand() -> None:
    # diffs 0.5, 0, 2; default denominators 1 + |out| = 2.5, 3, 2
    ref, out = torch.tensor([1.0, 2.0, -3.0]), torch.tensor([1.5, 2.0, -1.0])
    cmp = compare(ref, out, [("reference", 0.5), ("output", 2.0), ("output", 0.0)])
    assert cmp.outcome is Outcome.PASS
    assert cmp.max_abs == 2.0 and cmp.margin == 1.0
    assert cmp.extra == {
        ("reference", 0.5): q32(2, 2.5),  # 0.5/1.5, 0/2, 2/2.5: the last
        ("output", 2.0): q32(2, 3),       # 0.5/4, 0/5, 2/3
        ("output", 0.0): 2.0,            # ratio 0: max |ref - out|
    }


def test_random_margins_match_float32_numpy() -> None:
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(1000, generator=g) * 10
    out = ref + torch.randn(1000, generator=g) * 1e-2
    r, o = ref.numpy(), out.numpy()
    d = np.abs(r - o)
    cmp = compare(ref, out, [("reference", 1.0)])
    assert cmp.max_abs == float(d.max())
    assert cmp.margin == float((d / (np.abs(o) + np.float32(1))).max())
    assert cmp.extra[("reference", 1.0)] == float((d / (np.abs(r) + np.float32(1))).max())


@pytest.mark.parametrize("ratio", [0.13, 100.0, 1 / 3, 1.3e-6 / 1e-5, 1e-3 / 1e-5, 0.0, 1.0, 7])
@pytest.mark.parametrize("scale", ["output", "reference"])
def test_torch_rounds_the_ratio_to_float32_then_multiplies_then_adds(scale: str, ratio: float) -> None:
    # what the kernel computes: fp32(ratio), then |s| * ratio and + 1 rounded apart, then IEEE division
    g = torch.Generator().manual_seed(11)
    ref = torch.randn(4096, generator=g) * 10.0 ** torch.randint(-3, 4, (4096,), generator=g).float()
    out = ref * (1 + torch.randn(4096, generator=g) * 1e-3)
    r, o = ref.numpy(), out.numpy()
    s = np.abs(o if scale == "output" else r)
    expected = (np.abs(r - o) / (s * np.float32(ratio) + np.float32(1))).max()
    assert compare_torch(ref, out, [(scale, ratio)]).extra[(scale, ratio)] == float(expected)


def test_a_ratio_rounded_in_float64_would_give_another_margin() -> None:
    # the rounding above is observable: find |s| where fp32(|s| * fp32(1/3)) != fp32(|s| * 1/3)
    ratio, one = 1 / 3, np.float32(1)
    for k in range(1, 10_000):  # |ref| = s, |ref - out| = 1
        s = np.float32(1e6 + 0.0625 * k)
        by_f32 = one / (np.float32(s * np.float32(ratio)) + one)
        by_f64 = one / (np.float32(np.float64(s) * ratio) + one)
        if by_f32 != by_f64:
            break
    assert by_f32 != by_f64
    ref, out = torch.tensor([float(s)]), torch.tensor([float(s) - 1.0])
    assert compare_torch(ref, out, [("reference", ratio)]).extra[("reference", ratio)] == float(by_f32)


@pytest.mark.parametrize("ref, out", [
    ([1.0, NAN], [1.0, 2.0]),          # NaN in the reference
    ([1.0, 2.0], [1.0, NAN]),          # NaN in the candidate
    ([NAN, 2.0], [NAN, 2.0]),          # NaN on both sides at one place: still never equal
    ([INF, 2.0], [NAN, 2.0]),          # an infinity against a NaN
    ([INF, 2.0], [1.0, 2.0]),          # an infinity on one side only
    ([INF, 2.0], [-INF, 2.0]),         # opposite signs
    ([INF, 1.0, 2.0], [1.0, INF, 2.0]),  # as many infinities, at other places
])
def test_nonfinite_outcomes(ref: list, out: list) -> None:
    cmp = compare(torch.tensor(ref), torch.tensor(out), [("reference", 0.5)])
    assert cmp == Comparison(Outcome.NONFINITE, INF, INF, {("reference", 0.5): INF})


def test_equal_infinities_are_left_out() -> None:
    ref = torch.tensor([INF, -INF, 1.0, 3.0])
    out = torch.tensor([INF, -INF, 1.25, 3.0])
    cmp = compare(ref, out, [("reference", 2.0)])
    assert cmp.outcome is Outcome.PASS
    assert cmp.max_abs == 0.25 and cmp.margin == q32(0.25, 2.25)
    assert cmp.extra == {("reference", 2.0): q32(0.25, 3)}


def test_only_equal_infinities_pass_with_zero_margins() -> None:
    cmp = compare(torch.tensor([INF, -INF]), torch.tensor([INF, -INF]), [("output", 1.0)])
    assert cmp == Comparison(Outcome.PASS, 0.0, 0.0, {("output", 1.0): 0.0})


def test_empty_tensors_pass_with_zero_margins() -> None:
    cmp = compare(torch.zeros(0, 3), torch.zeros(0, 3), [("reference", 0.13)])
    assert cmp == Comparison(Outcome.PASS, 0.0, 0.0, {("reference", 0.13): 0.0})


def test_integers_compare_in_float64() -> None:
    cmp = compare(torch.tensor([3, 4], dtype=torch.int32), torch.tensor([3, 5], dtype=torch.int32))
    assert cmp.margin == 1 / 6 and cmp.max_abs == 1.0  # 1/6 in float64, not float32
    big = compare(torch.tensor([2**40 + 1]), torch.tensor([2**40]))  # beyond float32's 24 bits
    assert big.max_abs == 1.0 and big.margin == 1 / (1 + 2**40)


def test_bools_compare_as_numbers() -> None:
    cmp = compare(torch.tensor([True, False]), torch.tensor([True, True]), [("reference", 1.0)])
    assert cmp.max_abs == 1.0 and cmp.margin == 0.5 and cmp.extra == {("reference", 1.0): 1.0}


@pytest.mark.parametrize("ref, out", [
    (torch.zeros(3), torch.zeros(4)),
    (torch.zeros(2, 3), torch.zeros(3, 2)),
    (torch.zeros(3), None),
    (None, torch.zeros(3)),
    (torch.zeros(3), [0.0, 0.0, 0.0]),
    (torch.zeros(3), np.zeros(3, dtype=np.float32)),
])
def test_shape_mismatches_and_non_tensors(ref: object, out: object) -> None:
    cmp = compare(ref, out, [("output", 2.0)])
    assert cmp == Comparison(Outcome.SHAPE, INF, INF, {("output", 2.0): INF})
    assert compare_torch(ref, out).outcome is Outcome.SHAPE


def test_cpu_tensors_take_the_torch_path() -> None:
    assert not kernel_takes(torch.zeros(8), torch.zeros(8))


# -- the kernel, without a GPU -------------------------------------------------------------------

def test_kernel_source_compiles_for_sm_90() -> None:
    image = compile_source(SOURCE, "sm_90", where=WHERE, use_cache=False)
    assert image.cubin[:4] == b"\x7fELF"
    assert list(entry_points(SOURCE)) == [ENTRY]


@pytest.mark.parametrize("n, ref_ptr, out_ptr, expected", [
    (100, 0, 256, (0, 25)),        # both aligned: all float4
    (101, 0, 16, (0, 25)),         # one left over, read alone
    (100, 4, 20, (3, 24)),         # both 4 bytes past: 3 alone first, 97 = 3 + 4 * 24 + 1
    (2, 12, 28, (1, 0)),           # shorter than the peel
    (100, 0, 4, (100, 0)),         # aligned apart: element by element
    (2**31 + 7, 8, 8, (2, (2**31 + 5) // 4)),  # 64-bit counts
])
def test_split_aligns_both_pointers(n: int, ref_ptr: int, out_ptr: int, expected: tuple[int, int]) -> None:
    head, nvec = split(n, ref_ptr, out_ptr)
    assert (head, nvec) == expected
    assert (ref_ptr + 4 * head) % 16 == (out_ptr + 4 * head) % 16 == 0 or nvec == 0
    assert head + 4 * nvec <= n


@pytest.mark.parametrize("chunk", [[], [("output", 1.0)], [("reference", 0.13), ("output", 100.0)],
                                   [("reference", k / 8) for k in range(EXTRA_PER_LAUNCH)]])
def test_launch_arguments_fit_the_kernel_signature(chunk: list) -> None:
    ref = torch.empty(10, device="meta")
    result = torch.empty(3 + max(1, len(chunk)), dtype=torch.int32, device="meta")
    args = launch_arguments(ref, ref, 0, 2, chunk, result[:3], result[3:])
    check_launch(entry_points(SOURCE)[ENTRY], args, 1, BLOCK, 0, WHERE, "meta")
    assert args[5] == len(chunk)
    assert args[6] == sum(1 << k for k, (scale, _) in enumerate(chunk) if scale == "reference")


class NumpyKernel:
    """A stand-in for kbm_compare on CPU tensors, as its comments specify it, element by element in
    numpy: it tests the host side's arguments, chunks and read-back, not the CUDA code."""

    def __init__(self) -> None:
        self.launches = 0

    def launch(self, name: str, args: tuple, grid: int, block: int) -> None:
        ref, out, n, head, nvec, n_extra, ref_scaled, *q, result, extra = args
        assert name == ENTRY and 1 <= grid and block == BLOCK and n_extra <= EXTRA_PER_LAUNCH == len(q)
        assert head + 4 * nvec <= n == ref.numel()
        self.launches += 1
        r, o = ref.reshape(-1).numpy(), out.reshape(-1).numpy()
        nonfinite = ~np.isfinite(r) | ~np.isfinite(o)
        if (nonfinite & (r != o)).any():
            result[0] |= 1
        r, o = r[~nonfinite], o[~nonfinite]

        def bits(m: np.ndarray) -> int:  # the int bits of the largest, a NaN as 0x7fffffff
            b = m.astype(np.float32).view(np.int32).copy()
            b[np.isnan(m)] = 0x7FFFFFFF
            return int(b.max(initial=0))

        with np.errstate(over="ignore", invalid="ignore"):  # IEEE overflow, as on the GPU
            d, one = np.abs(r - o), np.float32(1)
            result[1] = max(int(result[1]), bits(d))
            result[2] = max(int(result[2]), bits(d / (np.abs(o) + one)))
            for k in range(n_extra):
                s = np.abs(r if (ref_scaled >> k) & 1 else o)
                extra[k] = max(int(extra[k]), bits(d / (s * np.float32(q[k]) + one)))


@pytest.mark.parametrize("kind", ["close", "far", "extremes", "nan", "inf-equal", "inf-signs"])
@pytest.mark.parametrize("n_extra", [0, 1, 8, 9, 17])
def test_kernel_path_host_side_with_a_numpy_stand_in(monkeypatch: pytest.MonkeyPatch, kind: str, n_extra: int) -> None:
    import kbm_toolkit.cuda.comparison as comparison

    stand_in = NumpyKernel()
    monkeypatch.setattr(comparison, "_loaded", lambda device: (stand_in, 4))
    g = torch.Generator().manual_seed(n_extra)
    ref, out = values(1001, "close" if kind in ("nan", "inf-equal", "inf-signs") else kind, g)
    if kind == "nan":
        out[500] = NAN
    elif kind.startswith("inf"):
        ref[7], out[7] = INF, (INF if kind == "inf-equal" else -INF)
    extra = [("reference" if k % 3 else "output", 0.01 * 2**k) for k in range(n_extra)]
    got, want = comparison._compare_kernel(ref, out, extra), compare_torch(ref, out, extra)
    assert same(got, want), (got, want)
    assert stand_in.launches == max(1, -(-n_extra // EXTRA_PER_LAUNCH))


# -- the kernel against the torch path, on the GPU ----------------------------------------------

EXTRAS = [
    [],
    [("output", 1.0)],
    [("reference", 1.3e-6 / 1e-5)],
    [("output", 0.0), ("reference", 1e-3 / 1e-5), ("output", 1 / 3)],
    # more than one launch holds: 10 margins take two passes
    [("reference" if k % 2 else "output", r)
     for k, r in enumerate([0.01, 0.13, 0.5, 1.0, 2.0, 3.0, 7.0, 10.0, 100.0, 1e4])],
]


def same(a: Comparison, b: Comparison) -> bool:
    """Equal outcomes and bit-equal margins (a NaN margin, from inf / inf, equals a NaN)."""
    def eq(x: float, y: float) -> bool:
        return x == y or (math.isnan(x) and math.isnan(y))

    return (a.outcome is b.outcome and eq(a.margin, b.margin) and eq(a.max_abs, b.max_abs)
            and a.extra.keys() == b.extra.keys() and all(eq(a.extra[k], b.extra[k]) for k in a.extra))


def check(ref: torch.Tensor, out: torch.Tensor, extras: list[list] = EXTRAS) -> None:
    assert kernel_takes(ref, out) or ref.numel() == 0
    for extra in extras:
        got, want = compare(ref, out, extra), compare_torch(ref, out, extra)
        assert same(got, want), (ref.shape, extra, got, want)


def values(n: int, kind: str, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A reference and a candidate of `n` float32s (on the CPU) of one kind."""
    ref = torch.randn(n, generator=g) * 10 ** torch.randint(-4, 5, (n,), generator=g).float()
    if kind == "close":
        return ref, ref * (1 + torch.randn(n, generator=g) * 1e-4)
    if kind == "equal":
        return ref, ref.clone()
    if kind == "far":
        return ref, torch.randn(n, generator=g) * 1e3
    if kind == "extremes":  # overflowing differences (inf margins), subnormals, signed zeros
        pool = torch.tensor([3e38, -3e38, 1e-40, -1e-40, 0.0, -0.0, 1.0, -1.0, 1e30])
        return (pool[torch.randint(0, len(pool), (n,), generator=g)],
                pool[torch.randint(0, len(pool), (n,), generator=g)])
    raise ValueError(kind)


SIZES = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 255, 256, 257, 1023, 1024, 4097, 65537, 262_147, 1_000_003, 4_194_307]


@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["close", "equal", "far", "extremes"])
def test_kernel_equals_torch(n: int, kind: str) -> None:
    g = torch.Generator().manual_seed(n)
    ref, out = values(n, kind, g)
    check(ref.cuda(), out.cuda())


@pytest.mark.gpu
@pytest.mark.parametrize("ref_offset, out_offset", [(0, 1), (1, 1), (2, 2), (3, 3), (1, 2), (3, 0), (2, 3)])
@pytest.mark.parametrize("n", [1, 3, 6, 9, 4099, 1_000_001])
def test_kernel_equals_torch_on_misaligned_views(ref_offset: int, out_offset: int, n: int) -> None:
    g = torch.Generator().manual_seed(n + 10 * ref_offset + out_offset)
    ref, out = values(n, "close", g)
    ref_base, out_base = torch.zeros(n + 4, device="cuda"), torch.zeros(n + 4, device="cuda")
    ref_base[ref_offset:ref_offset + n], out_base[out_offset:out_offset + n] = ref, out
    check(ref_base[ref_offset:ref_offset + n], out_base[out_offset:out_offset + n])


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(), (0,), (0, 5), (3, 5, 7), (2, 1, 1025), (64, 3, 33, 33)])
def test_kernel_equals_torch_on_shapes(shape: tuple[int, ...]) -> None:
    g = torch.Generator().manual_seed(len(shape))
    n = math.prod(shape)
    ref, out = values(n, "close", g)
    check(ref.reshape(shape).cuda(), out.reshape(shape).cuda())


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["nan-ref", "nan-out", "nan-both", "inf-equal", "inf-one-side", "inf-signs",
                                  "inf-moved", "all-inf-equal", "inf-vs-nan"])
@pytest.mark.parametrize("n", [1, 5, 4096, 100_003])
def test_kernel_equals_torch_on_nonfinite_values(case: str, n: int) -> None:
    g = torch.Generator().manual_seed(n)
    ref, out = values(n, "close", g)
    at = torch.randint(0, n, (max(1, n // 100),), generator=g)
    last = at[-1:]  # one place the planted value always lands
    if case == "nan-ref":
        ref[at] = NAN
    elif case == "nan-out":
        out[last] = NAN
    elif case == "nan-both":
        ref[at], out[at] = NAN, NAN
    elif case == "inf-equal":
        ref[at], out[at] = INF, INF
        ref[last], out[last] = -INF, -INF
    elif case == "inf-one-side":
        ref[at], out[at] = INF, INF
        out[last] = 1.0
    elif case == "inf-signs":
        ref[at], out[at] = INF, INF
        out[last] = -INF
    elif case == "inf-moved":
        out[last] = INF
        ref[(last + 1) % n] = INF
    elif case == "all-inf-equal":
        ref[:], out[:] = -INF, -INF
    elif case == "inf-vs-nan":
        ref[last], out[last] = INF, NAN
    check(ref.cuda(), out.cuda())
    expect_pass = case in ("inf-equal", "all-inf-equal") or (case == "inf-moved" and n == 1)
    assert compare(ref.cuda(), out.cuda()).outcome is (Outcome.PASS if expect_pass else Outcome.NONFINITE)


@pytest.mark.gpu
def test_non_float32_and_non_contiguous_cuda_tensors_take_the_torch_path() -> None:
    ref = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    out = torch.tensor([[1.0, 2.0], [3.0, 6.0]], device="cuda")
    assert not kernel_takes(ref.t(), out.t())
    assert not kernel_takes(ref.double(), out.double())
    assert not kernel_takes(ref.half(), out)
    assert compare(ref.t(), out.t()).margin == q32(2, 7) == compare(ref, out).margin
    assert compare(ref.long(), out.long()).margin == 2 / 7  # integers in float64


@pytest.mark.gpu
def test_kernel_beyond_two_to_the_31_elements() -> None:
    n = 2**31 + 5
    free, _ = torch.cuda.mem_get_info()
    if free < 7 * 4 * n:  # the two tensors and compare_torch's temporaries
        pytest.skip(f"needs {7 * 4 * n / 1e9:.0f} GB of free GPU memory, {free / 1e9:.0f} GB free")
    ref = torch.randn(n, device="cuda")
    out = torch.randn(n, device="cuda").mul_(1e-3).add_(ref)
    out[n - 3] = ref[n - 3] + 100.0  # the largest error past index 2^31
    want = compare_torch(ref, out, [("reference", 0.13)])
    got = compare(ref, out, [("reference", 0.13)])
    assert same(got, want), (got, want)
    assert got.max_abs >= 99.0
    out[n - 1] = NAN
    assert compare(ref, out).outcome is Outcome.NONFINITE


@pytest.mark.gpu
def test_comparisons_and_a_checksum_read_back_together_answer_as_they_do_apart() -> None:
    from kbm_toolkit.cuda.checksum import Watch
    from kbm_toolkit.cuda.comparison import queue_compare
    from kbm_toolkit.cuda.readback import Readback

    ref = torch.randn(1_000_003, device="cuda")
    out = ref + torch.randn_like(ref) * 1e-3
    out[7] = NAN
    other = ref[1:].clone() * (1 + 1e-4)  # against ref[1:], a view 4 bytes in: read element by element
    extra = [("reference", 0.1 * k) for k in range(1, 11)]  # two launches of the kernel, 8 extras each
    watch = Watch([ref, other])
    readback = Readback()
    fine = queue_compare(readback, ref[1:], other, extra)
    nonfinite = queue_compare(readback, ref, out)
    changed = watch.queue_changed(readback)
    shape = queue_compare(readback, ref, out[:5])  # answered at once: no kernel part
    assert len(readback.parts) == 3
    other[0] += 1.0  # after queueing, before the run: the checksum sees it, as it runs after
    readback.run()
    assert same(fine(), compare(ref[1:], other, extra)) and nonfinite().outcome is Outcome.NONFINITE
    assert changed() is True and shape().outcome is Outcome.SHAPE
    assert len(readback.gpu_ms) == 3 and all(ms >= 0 for ms in readback.gpu_ms)


def test_queued_comparisons_read_their_own_slots_of_the_shared_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-back's plumbing on the CPU: the kernel emulated by writing what compare_torch finds
    into its int32 slots, as the kernel writes them (bad flag, then float bits)."""
    import kbm_toolkit.cuda.comparison as comparison
    from kbm_toolkit.cuda.readback import Readback

    def emulated(ref, out, extra, result):
        found = compare_torch(ref, out, extra)
        result[0] = int(found.outcome is Outcome.NONFINITE)
        if found.outcome is Outcome.PASS:
            values = [found.max_abs, found.margin, *(found.extra[e] for e in extra)]
            result[1:1 + len(values)] = torch.tensor(values, dtype=torch.float32).view(torch.int32)

    monkeypatch.setattr(comparison, "_launch_kernel", emulated)
    monkeypatch.setattr(comparison, "kernel_takes", lambda ref, out: True)
    ref = torch.linspace(-3, 3, 101)
    extra = [("reference", 0.5), ("output", 2.0), ("reference", 0.0)]  # 6 slots: three words
    wrong, nan = ref.clone(), ref.clone()
    wrong[17] += 0.25
    nan[3] = NAN
    readback = Readback(device="cpu")
    first = comparison.queue_compare(readback, ref, wrong, extra)
    second = comparison.queue_compare(readback, ref, nan)  # 4 slots: two words
    two = [("output", 1.0), ("reference", 0.25)]  # 5 slots: three words, the last half used
    third = comparison.queue_compare(readback, ref, ref + 1e-3, two)
    assert [p.words for p in readback.parts] == [3, 2, 3]
    readback.run()
    assert same(first(), compare_torch(ref, wrong, extra)) and first().max_abs == pytest.approx(0.25)
    assert second().outcome is Outcome.NONFINITE
    assert same(third(), compare_torch(ref, ref + 1e-3, two))
    assert readback.gpu_ms == [0.0, 0.0, 0.0]
