"""Equivalence at a shape: specialised compiles decide which mutants no values at a shape can witness."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kbm_toolkit.analysis.matrix import Matrix
from kbm_toolkit.analysis.shape_bound import bound, equivalence_table, shape_bound
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.shape_equivalence import DIFFERS, SAME, Judge, judged_already, shapes_of
from kbm_toolkit.mutation.specialize import LaunchConfig, definitions, literal, specialized_source
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import substrate_for
from support import problem_from_source, rule

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, step):
        super().__init__()
        self.step = step

    def forward(self, x):
        return x[::self.step] * 2.0


n = 1024
step = 1


def get_inputs():
    return [torch.randn(n * step)]


def get_init_inputs():
    return [step]
'''

KERNEL = '''// every `step`-th element, doubled
extern "C" __global__ void pick(const float* __restrict__ x, float* __restrict__ out, long long n, int step) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i * step] * 2.0f;
    }
}
'''

LAUNCHER = '''BLOCK = 256


def launch(k, model, x):
    n = x.numel() // model.step
    out = k.empty(n)
    k.pick(x, out, n, model.step, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
'''

RULES = [
    rule("step-div", r"i \* step", "i / step"),                              # the same code while step is 1
    rule("double-to-triple", r"2\.0f", "3.0f"),                              # other code at every shape
    rule("grid-floor", r"k\.cdiv\(n, BLOCK\)", "n // BLOCK", target="launcher", family="boundary"),
    rule("guard-le", r"i < n", "i <= n", family="boundary"),                # reads and writes one past n
]


@pytest.fixture
def case(tmp_path: Path):
    problem = problem_from_source(tmp_path, "Pick", PROBLEM)
    folder = tmp_path / "subs" / "mine" / "1_Pick"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text(KERNEL)
    (folder / "launch.py").write_text(LAUNCHER)
    substrate = substrate_for(problem, tmp_path / "subs")
    return problem, substrate, {m.rule: m for m in generate(substrate, RULES)}


def verdicts(problem, substrate, mutant, shapes: list[dict]) -> list[int | None]:
    specs = [InputSpec.make(problem.key, 1, shape=s) for s in shapes]
    return [v.same for v in Judge(problem, substrate, specs, "sm_90").judge(mutant)]


def test_a_mutant_that_only_a_fixed_parameter_hides_is_the_same_there_and_differs_elsewhere(case) -> None:
    problem, substrate, mutants = case
    assert verdicts(problem, substrate, mutants["step-div"], [{}]) == [SAME]
    assert verdicts(problem, substrate, mutants["step-div"], [{}, {"step": 2}]) == [SAME, DIFFERS]


def test_a_shape_the_original_cannot_run_at_is_left_undecided_and_judging_goes_on(case) -> None:
    problem, substrate, mutants = case
    assert verdicts(problem, substrate, mutants["step-div"], [{}, {"n": -5}, {"step": 2}]) == [SAME, None, DIFFERS]


def test_a_hidden_input_without_its_checkout_is_no_verdict_but_one_line(case, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.errors import MissingCheckout

    monkeypatch.delenv("KBM_KBV", raising=False)
    problem, substrate, mutants = case
    hidden = InputSpec.make(problem.key, 1, "kbv-hidden", hidden={"config": 0, "sha256": "ab" * 32})
    # stored as undecided, it would settle the mutant: judged again with the checkout, nothing would change
    with pytest.raises(MissingCheckout, match="needs a KernelBench-Verified checkout"):
        Judge(problem, substrate, [InputSpec.make(problem.key, 1), hidden], "sm_90")


def test_a_change_to_the_values_differs_at_the_first_shape_and_judging_stops_there(case) -> None:
    problem, substrate, mutants = case
    assert verdicts(problem, substrate, mutants["double-to-triple"], [{}, {"n": 1000}]) == [DIFFERS]


def test_a_guard_is_the_same_only_where_the_size_is_a_multiple_of_the_block(case) -> None:
    problem, substrate, mutants = case
    # at n = 1024 no thread reaches i == n: `<=` and `<` compile alike once the grid is known
    assert verdicts(problem, substrate, mutants["guard-le"], [{}, {"n": 1000}]) == [SAME, DIFFERS]
    assert verdicts(problem, substrate, mutants["grid-floor"], [{}, {"n": 1000}]) == [SAME, DIFFERS]


def test_shapes_are_told_apart_by_overrides_and_hidden_configs_not_by_seeds_or_values() -> None:
    a = InputSpec.make("p", 1)
    b = InputSpec.make("p", 2, base="normal", params=(0.0, 3.0))
    c = InputSpec.make("p", 1, shape={"n": 5})
    d = InputSpec.make("p", 1, base="kbv-hidden", hidden={"config": 0, "sha256": "x"})
    assert a.shape_key == b.shape_key != c.shape_key != d.shape_key
    assert [s.shape_key for s in shapes_of([c, d, b, a])] == [b.shape_key, c.shape_key, d.shape_key]


def test_literals_keep_every_bit_and_the_most_negative_integers() -> None:
    assert literal("float32", 0.1) == f"__int_as_float(0x{struct.unpack('<I', struct.pack('<f', 0.1))[0]:08x})"
    assert literal("int32", -2**31) == "(-2147483647 - 1)"
    assert literal("int64", 5) == "5LL" and literal("uint32", 5) == "5u" and literal("bool", 0) == "false"


def test_a_specialised_source_compiles_with_one_clone_per_launch_and_leaves_comments_alone() -> None:
    source = "// extern \"C\" __global__ void ghost(int n) {}\n" + KERNEL
    assert list(definitions(source)) == ["pick"]
    configs = [LaunchConfig("pick", (4,), (256,), (("n", "int64", 1024), ("step", "int32", s))) for s in (1, 2)]
    text = specialized_source(source, {"pick": configs})
    assert "pick__at0(" in text and "pick__at1(" in text and "void pick(" not in text
    assert "blockDim" not in text.split("pick__at0", 1)[1]
    compile_source(text, use_cache=False)


def test_shape_bound_needs_every_shape_and_counts_what_is_not_judged() -> None:
    assert bound({"a": 1, "b": 1}, {"a", "b"}) is True
    assert bound({"a": 1}, {"a", "b"}) is None
    assert bound({"a": 0}, {"a", "b"}) is False
    assert bound({"a": 1, "b": None}, {"a", "b"}) is None




def test_a_mutant_is_judged_again_at_shapes_it_differs_at_none_of() -> None:
    # same code at the official shape, other code at the probe's: judging stopped there, so a
    # protocol about to run at a hidden config's shape still needs its verdict at that shape
    verdicts = {"official": SAME, "probe": DIFFERS}
    assert judged_already(verdicts, {"official", "probe", "gate"})
    assert not judged_already(verdicts, {"official", "hidden"})
    assert judged_already({**verdicts, "hidden": SAME}, {"official", "hidden"})
    assert judged_already({"official": SAME, "hidden": None}, {"official", "hidden"})  # undecided is decided


def test_shape_bound_and_the_table_read_verdicts_against_the_inputs_shapes() -> None:
    import json

    official, odd = InputSpec.make("mine/1_X", 1), InputSpec.make("mine/1_X", 1, shape={"n": 7})
    checks = {official.id: {"spec": json.dumps(official.record()), "valid": 1},
              odd.id: {"spec": json.dumps(odd.record()), "valid": 1}}
    verdicts = {"m1": {official.shape_key: 1, odd.shape_key: 1}, "m2": {official.shape_key: 1, odd.shape_key: 0},
                "m3": {official.shape_key: 0}}
    mx = Matrix(Problem("mine/1_X", "mine", 1, "X", Path("x.py"), "mine"),
                {"m1": {"family": "boundary", "rule": "r"}, "m2": {"family": "boundary", "rule": "r"},
                 "m3": {"family": "arithmetic", "rule": "q"}}, checks, {}, verdicts=verdicts)
    found = shape_bound({"mine/1_X": {"m1", "m2"}}, [mx], {"mine/1_X": [official.id, odd.id]})
    assert (found["mutants"], found["bound"], found["unjudged"]) == (2, 1, 0)
    only_official = shape_bound({"mine/1_X": {"m1", "m2"}}, [mx], {"mine/1_X": [official.id]})
    assert only_official["bound"] == 2
    table = dict(equivalence_table([mx]))
    assert (table["boundary"]["official"], table["boundary"]["every"]) == (2, 1)
    assert (table["all"]["distinct"], table["all"]["judged"], table["arithmetic"]["official"]) == (3, 3, 0)


def test_on_the_demo_pool_every_cell_at_a_shape_judged_the_same_gives_the_correct_kernels_margin(
        tmp_path: Path, demo) -> None:
    """The proof checked against the H200's cells: a mutant that runs the original's machine code at a
    shape must give, on every input of that shape, exactly the correct kernel's margin. Cells an old
    evaluator measured after another mutant's stray write (`overwrite_suspects`) ran on other bits
    and are left aside."""
    import json
    import math
    import shutil

    from kbm_toolkit.mutation.shape_equivalence import judge_problems
    from kbm_toolkit.store import Store, shipped_store_path

    shutil.copy(shipped_store_path("demo"), tmp_path / "demo.db")
    store = Store(tmp_path / "demo.db")
    judged = judge_problems(store, demo.select(level="demo"), "sm_90", workers=2)
    assert not judged.skipped and sum(judged.judged.values()) == 468
    verdicts = store.shape_verdicts()
    shapes = {i: InputSpec.from_record(json.loads(s)).shape_key for i, s in store.db.execute("select id, spec from inputs")}
    suspect = {(m, i) for i, ms in store.overwrite_suspects().items() for m in ms}
    same = [m for m, v in verdicts.items() if SAME in v.values()]
    checked = [(m, outcome, margin, correct) for m, cells in store.margins_beside_correct(same).items()
               for i, outcome, margin, correct in cells
               if verdicts[m].get(shapes[i]) == SAME and (m, i) not in suspect]
    assert len({m for m, *_ in checked}) >= 15 and len(checked) >= 300  # the check has teeth
    wrong = [c for c in checked if c[1] != "pass" or not math.isclose(c[2], c[3], rel_tol=1e-9)]
    assert not wrong, wrong[:5]
