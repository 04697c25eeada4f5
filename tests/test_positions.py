"""Mutants with a depth (level 3): which kernels a mutation changed, where in the forward each
placed mutant runs, what the store keeps, and the launcher's view of the two images."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbm_toolkit.cuda.cubin import changed_kernels, sections
from kbm_toolkit.cuda.kernels import PlacedKernels
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.errors import KbmError
from kbm_toolkit.mutation.campaign import mutate_problems
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.positions import launch_sequence, placements, positioned_id, stored
from kbm_toolkit.problems.pack import load_pack
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.store import Store
from kbm_toolkit.vocabulary import MutantStatus

from support import rule, write_pack

TWO = '''
extern "C" __global__ void a(float* p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = p[i] * 2.0f; }
extern "C" __global__ void b(float* p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = p[i] + 1.0f; }
'''
SHARED = '''
__device__ __noinline__ float f(float v) { return v * 3.0f; }
extern "C" __global__ void a(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] = f(p[i]); }
extern "C" __global__ void b(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] = f(p[i]) + 1.0f; }
extern "C" __global__ void c(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] = 0.0f; }
'''
CONSTANT = '''
__constant__ float scale[1] = {3.0f};
extern "C" __global__ void a(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] *= scale[0]; }
extern "C" __global__ void b(float* p, int n) { int i = threadIdx.x; if (i < n) p[i] = 1.0f; }
'''


def cubin(source: str) -> bytes:
    return compile_source(source, "sm_90").cubin


@pytest.mark.parametrize("source, edit, expected", [
    (TWO, ("+ 1.0f", "- 1.0f"), {"b"}),
    (TWO, ("i < n) p[i] = p[i] * 2.0f", "i <= n) p[i] = p[i] * 2.0f"), {"a"}),
    (TWO, ("* 2.0f", "* 2.0f"), set()),                # the same image
    (SHARED, ("v * 3.0f", "v * 4.0f"), {"a", "b"}),    # a device function both call, not c
    (CONSTANT, ("{3.0f}", "{4.0f}"), {"a", "b"}),      # a section no kernel owns: any kernel may read it
])
def test_the_kernels_a_mutation_changed_are_read_off_the_cubins(source: str, edit: tuple[str, str],
                                                                  expected: set[str]) -> None:
    kernels = {"a", "b", "c"} if "void c" in source else {"a", "b"}
    assert changed_kernels(sections(cubin(source)), sections(cubin(source.replace(*edit))), kernels) == expected


def test_a_file_that_is_not_a_cubin_is_one_error() -> None:
    assert ".text.a" in sections(cubin(TWO))
    with pytest.raises(KbmError, match="not a 64-bit little-endian ELF"):
        sections(b"PK\x03\x04 not an elf")


SEQUENCE = ["conv", "relu"] * 6 + ["fc"]   # 13 launches: quartiles of 4, 3, 3, 3 (0-3, 4-6, 7-9, 10-12)


def test_one_launch_per_quartile_of_depth_of_the_changed_kernels() -> None:
    found = placements(SEQUENCE, {"relu"}, "image-hash")
    assert [p.quartile for p in found] == [0, 1, 2, 3]
    assert all(SEQUENCE[p.position] == "relu" and p.launches == 13 for p in found)
    # the launch the evaluator counts: the K-th of that kernel
    assert all(p.launch == f"relu#{SEQUENCE[:p.position].count('relu')}" for p in found)
    assert found == placements(SEQUENCE, {"relu"}, "image-hash")           # drawn, not random
    assert [p.quartile for p in placements(SEQUENCE, {"fc"}, "x")] == [3]  # the head is in the last quartile only
    assert placements(SEQUENCE, {"pool"}, "x") == []                        # never launched


def test_the_draw_spreads_over_each_quartile() -> None:
    positions = {p.position for key in map(str, range(60)) for p in placements(SEQUENCE, {"conv", "relu"}, key)}
    assert positions == set(range(12))  # every conv and relu launch is drawn for some image


class _Images:
    """Stands in for one image's `Kernels`: records the launches it is asked for."""

    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        self._signatures = {"conv": None, "relu": None}
        self.name, self.log = name, log

    def launch(self, kernel: str, args: tuple, grid, block, shmem: int = 0) -> None:
        self.log.append((kernel, self.name))

    def empty(self, *shape: int) -> str:
        return f"{self.name} empty {shape}"


def test_only_the_placed_launch_runs_the_mutated_image_and_each_forward_counts_again() -> None:
    log: list[tuple[str, str]] = []
    k = PlacedKernels(_Images("original", log), _Images("mutant", log), "relu#1")
    for _ in range(2):
        k.restart()
        for name in ["conv", "relu"] * 3:
            getattr(k, name)(1, grid=1, block=1)
    assert [who for _, who in log] == ["original"] * 3 + ["mutant"] + ["original"] * 2 + \
                                      ["original"] * 3 + ["mutant"] + ["original"] * 2
    assert k.empty(4) == "original empty (4,)"  # allocation is the original image's


NET_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for _ in range(4):
            x = torch.relu(x) * 2.0
        return x


size = 1000


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
'''
NET_KERNEL = '''extern "C" __global__ void relu(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
extern "C" __global__ void twice(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * 2.0f;
}
'''
NET_LAUNCH = '''BLOCK = 128


def launch(k, model, x):
    n = x.numel()
    for _ in range(4):
        y = k.empty_like(x)
        k.relu(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
        x = k.empty_like(y)
        k.twice(y, x, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return x
'''
NET_RULES = [rule("times-three", r"\* 2\.0f", "* 3.0f"),          # twice's code only
             rule("also-times-three", r"x\[i\] \* 2\.0f", "x[i] * 3.0f"),  # the same image: duplicates
             rule("relu-leaks", r": 0\.0f", ": 0.5f"),            # relu's code only
             rule("launcher-block", r"BLOCK = 128", "BLOCK = 64", target="launcher")]


@pytest.fixture
def net(tmp_path: Path):
    bench = write_pack(tmp_path / "mybench", replace={
        "problems/level1/3_Net.py": NET_PROBLEM, "substrates/level1/3_Net/kernel.cu": NET_KERNEL,
        "substrates/level1/3_Net/launch.py": NET_LAUNCH,
        "substrates/level1/3_Net/substrate.toml": "[mutation]\npositioned = true\n"})
    problem = ProblemSet.discover(packs=[load_pack(bench)]).get("mybench/level1/3")
    store = Store(tmp_path / "kbm.db")
    mutate_problems(store, [problem], "sm_90", workers=1, require_gate=False, rules=NET_RULES)
    return problem, store


def test_kbm_mutate_places_a_networks_kernel_mutants_by_depth(net) -> None:
    problem, store = net
    substrate = substrate_for(problem)
    assert substrate.positioned and launch_sequence(problem, substrate) == ["relu", "twice"] * 4
    rows = {r["id"]: r for r in store.mutants(problem.key)}
    by_rule: dict[str, list[dict]] = {}
    for r in rows.values():
        by_rule.setdefault(r["rule"], []).append(r)
    # one placed mutant per quartile (two launches each), at a launch of the kernel it changes
    for name, kernel in (("times-three", "twice"), ("relu-leaks", "relu")):
        placed = sorted(by_rule[name], key=lambda r: r["position"])
        assert [r["position"] // 2 for r in placed] == [0, 1, 2, 3]
        assert all(r["status"] == MutantStatus.DISTINCT and r["launches"] == 8 for r in placed)
        assert [r["launch"] for r in placed] == [f"{kernel}#{q}" for q in range(4)]
        assert all(f"at launch {r['position'] + 1} of 8 ({r['launch']})" in r["name"] for r in placed)
    # the same image at the same launches: each a duplicate of its twin
    assert {rows[r["duplicate_of"]]["launch"] == r["launch"] for r in by_rule["also-times-three"]} == {True}
    assert {r["status"] for r in by_rule["also-times-three"]} == {MutantStatus.DUPLICATE}
    # host code runs at every layer its line reaches: not placed
    [launcher] = by_rule["launcher-block"]
    assert launcher["launch"] is None and launcher["position"] is None


def test_the_evaluator_rebuilds_placed_mutants_from_the_rules(net) -> None:
    problem, store = net
    rows = [r for r in store.mutants(problem.key) if r["status"] == MutantStatus.DISTINCT]
    made = stored(rows, generate(substrate_for(problem), NET_RULES))
    assert sorted(m.id for m in made) == sorted(r["id"] for r in rows)
    placed = {m.id: m for m in made if m.launch}
    assert all(positioned_id(m.id, m.launch) != m.id for m in placed.values())
    assert {(m.launch, m.position) for m in placed.values()} == \
        {(r["launch"], r["position"]) for r in rows if r["launch"]}
    # a row whose site the rules no longer make is left out, not guessed
    assert stored(rows, generate(substrate_for(problem), NET_RULES[2:])) != made


def test_kbm_mutate_unplaced_runs_each_kernel_mutant_at_every_launch_in_a_store_of_its_own(net, tmp_path: Path) -> None:
    problem, placed_store = net
    before = sorted(r["id"] for r in placed_store.mutants(problem.key))
    summary = mutate_problems(placed_store, [problem], "sm_90", workers=1, require_gate=False, rules=NET_RULES,
                              placed=False)
    # the placed mutants (and the cells they would have) are not replaced
    assert summary.problems == [] and "store holds its placed mutants" in summary.skipped[problem.key]
    assert sorted(r["id"] for r in placed_store.mutants(problem.key)) == before
    store = Store(tmp_path / "whole.db")
    mutate_problems(store, [problem], "sm_90", workers=1, require_gate=False, rules=NET_RULES, placed=False)
    rows = list(store.mutants(problem.key))
    assert {r["rule"] for r in rows} == {r.name for r in NET_RULES}
    assert all(r["launch"] is None and r["position"] is None for r in rows)  # one mutant per site, everywhere
    assert len(rows) == len(NET_RULES)
    made = stored([r for r in rows if r["status"] == MutantStatus.DISTINCT], generate(substrate_for(problem), NET_RULES))
    assert {m.launch for m in made} == {None}


@pytest.mark.gpu
def test_on_the_gpu_a_placed_mutant_changes_its_layer_only(net) -> None:
    import torch

    from kbm_toolkit.cuda.kernels import LoadedKernel, device_arch

    problem, store = net
    substrate = substrate_for(problem)
    original = LoadedKernel(substrate, compile_source(substrate.source, device_arch()))
    mutated = substrate.source.replace("x[i] * 2.0f", "x[i] * 3.0f")
    image = compile_source(mutated, device_arch())
    x = torch.rand(1000, device="cuda") + 0.5
    placed = [r for r in store.mutants(problem.key) if r["rule"] == "times-three"]
    for r in placed:
        out = LoadedKernel(substrate, image, mutated, launch=r["launch"], original=original.kernels)(None, [x])
        layer = int(r["launch"].partition("#")[2])
        expected = x
        for i in range(4):
            expected = torch.relu(expected) * (3.0 if i == layer else 2.0)
        assert torch.equal(out, expected), r["launch"]
    assert len(placed) == 4
