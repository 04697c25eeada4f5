from __future__ import annotations

import pytest

from kbm_toolkit.errors import CompileError
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.cuda.signatures import entry_points

SOURCE = """
extern "C" __global__ void scale(const float* __restrict__ x, float* out, long long n, float a) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * a;
}
"""


def test_compiles_without_a_gpu_and_hashes_the_image() -> None:
    image = compile_source(SOURCE, "sm_90", use_cache=False)
    assert image.cubin[:4] == b"\x7fELF"
    assert len(image.image_hash) == 64 and not image.cached


def test_comments_and_whitespace_do_not_change_the_image() -> None:
    a = compile_source(SOURCE, use_cache=False)
    b = compile_source("// a comment\n" + SOURCE.replace("  ", "    "), use_cache=False)
    assert a.image_hash == b.image_hash and a.source_hash != b.source_hash


def test_a_real_change_changes_the_image() -> None:
    a = compile_source(SOURCE, use_cache=False)
    b = compile_source(SOURCE.replace("x[i] * a", "x[i] / a"), use_cache=False)
    assert a.image_hash != b.image_hash


def test_arch_is_part_of_the_key_and_the_image() -> None:
    a = compile_source(SOURCE, "sm_90", use_cache=False)
    b = compile_source(SOURCE, "sm_80", use_cache=False)
    assert a.source_hash != b.source_hash and a.image_hash != b.image_hash


def test_second_compile_comes_from_the_cache() -> None:
    first = compile_source(SOURCE + "\n// cache test\n")
    second = compile_source(SOURCE + "\n// cache test\n")
    assert second.cached and second.cubin == first.cubin


def test_fp16_header_resolves() -> None:
    src = '#include <cuda_fp16.h>\n' + SOURCE.replace("out[i] = x[i] * a;", "out[i] = __half2float(__float2half(x[i] * a));")
    assert compile_source(src, use_cache=False).cubin


def test_compile_error_names_the_file_and_the_fault() -> None:
    with pytest.raises(CompileError) as e:
        compile_source(SOURCE.replace("x[i] * a", "y[i] * a"), where="substrates/x/kernel.cu", use_cache=False)
    assert e.value.line().startswith("substrates/x/kernel.cu: NVRTC:")
    assert '"y" is undefined' in e.value.line()
    assert e.value.log


def test_entry_point_signatures_are_typed() -> None:
    sig = entry_points(SOURCE)["scale"]
    assert [(p.name, p.dtype, p.pointer) for p in sig.params] == [
        ("x", "float32", True), ("out", "float32", True), ("n", "int64", False), ("a", "float32", False)]


def test_entry_points_ignore_commented_out_kernels_and_read_launch_bounds() -> None:
    src = ('// extern "C" __global__ void old(float* x) {}\n'
           'extern "C" __global__ void __launch_bounds__(256) k2(const int* idx, bool flag) {}\n')
    found = entry_points(src)
    assert list(found) == ["k2"]
    assert [(p.dtype, p.pointer) for p in found["k2"].params] == [("int32", True), ("bool", False)]
