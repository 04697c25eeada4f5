"""`kbm suite --format kbv`: KBV hidden test files that rebuild kbm's inputs bit for bit, on the CPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.suite import budget_curve, emit_protocol
from kbm_toolkit.cli import cli
from kbm_toolkit.problems.hidden_tests import read_hidden
from kbm_toolkit.problems.hidden_writer import (KbvAdmission, SuiteNote, code_digest, hidden_test_path,
                                                hidden_test_source, unexpressible, write_hidden_tests)
from kbm_toolkit.problems.input_spec import BASES, TRANSFORMS, InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.tensors import spec_inputs
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.store import Store

from support import KBV_CHECKOUT, hidden_source

needs_kbv = pytest.mark.skipif(not (KBV_CHECKOUT / "KernelBench" / "level1").is_dir(),
                               reason=f"needs a KernelBench-Verified checkout at {KBV_CHECKOUT}")

NOTE = SuiteNote("test.db", 2, 1e-2)

# integer inputs and a python scalar beside a float tensor; chained and tuple constants to override
GATHER = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, index, k):
        return x[index] * k


rows = cols = 6
n, k = 4, 3


def get_inputs():
    return [torch.randn(rows, cols), torch.randint(0, rows, (n,)), k]


def get_init_inputs():
    return []
'''

# a constant computed from another and read by get_init_inputs; one read inside class Model;
# `dim` a parameter name too, only an input size as a module constant
DERIVED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, bias_shape, dim=4):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(bias_shape))
        self.scale = nn.Parameter(torch.ones(width))
        self.dim = dim

    def forward(self, x):
        return x * self.scale + self.bias.sum()


batch_size = 2
dim = 8
width = 5
out_channels = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, dim, width)]


def get_init_inputs():
    return [bias_shape]
'''

# KBV's published form of a hidden test file, in kbm's own words
PUBLISHED = hidden_source([("D1", "as drawn", "_get_inputs()"), ("D2", "tripled", "_scale(_get_inputs(), 3.0)"),
                           ("D3", "negated", "_scale(_get_inputs(), -1.0)")], copy="1_Gather.py")

HEADER = "# Copyright (c) Somebody Else. All rights reserved.\n#\n# A licence line.\n\n"


@pytest.fixture(autouse=True)
def _cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBM_HIDDEN_DEVICE", "cpu")


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bits as integers, so that two NaNs with the same bits compare equal."""
    if t.is_floating_point():
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def assert_same(got: list, want: list) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        if isinstance(w, torch.Tensor):
            assert (g.dtype, tuple(g.shape), g.device) == (w.dtype, tuple(w.shape), w.device)
            assert torch.equal(bits(g), bits(w))
        else:
            assert g == w


def kbv_layout(root: Path, problem: Problem, text: str, copy: str | None = None) -> Path:
    """A KBV checkout's layout holding the emitted file and a copy of the problem beside it."""
    path = root / hidden_test_path(problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    level = path.parent.name
    (root / "KernelBench" / level).mkdir(parents=True, exist_ok=True)
    (root / "KernelBench" / level / problem.path.name).write_text(problem.source if copy is None else copy)
    return path


def run_as_kbv(path: Path) -> list:
    """Load the file as KBV's eval does (`load_hidden_inputs`) and call get_hidden_inputs()."""
    context = {"torch": torch, "__file__": str(path), "__builtins__": __builtins__}
    exec(compile(path.read_text(), str(path), "exec"), context)
    return context["get_hidden_inputs"]()


def expected(problem: Problem, specs: list[InputSpec]) -> list[list]:
    return [spec_inputs(s, problem.load(dict(s.shape)), "cpu") for s in specs]


def tmp_problem(root: Path, source: str, name: str = "Gather") -> Problem:
    path = root / "kb" / "level1" / f"1_{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return Problem(f"level1/1_{name}", "level1", 1, name, path, "kernelbench")


def make(problem: Problem, seed: int, base: str = "official", params: tuple = (), **kw) -> InputSpec:
    return InputSpec.make(problem.key, seed, base, params, **kw)


# --- bit for bit ---------------------------------------------------------------------------------

MATMUL_SPECS = [  # demo/4: two float inputs
    dict(seed=1),
    dict(seed=2, base="normal", params=(0.0, 2.0)),
    dict(seed=3, base="uniform", params=(-3.0, 5.0)),
    dict(seed=4, base="loguniform", params=(1e-3, 1e3)),
    dict(seed=5, transforms=[{"op": "scale", "by": -2.5}]),
    dict(seed=5, transforms=[{"op": "scale", "by": 3, "input": 1}]),
    dict(seed=6, transforms=[{"op": "spike", "dim": -1, "index": -1, "value": 1e4}]),
    dict(seed=6, transforms=[{"op": "spike", "dim": 0, "index": 0, "value": -7.0, "input": 0}]),
    dict(seed=7, transforms=[{"op": "spike_element", "value": 1e5}]),
    dict(seed=7, transforms=[{"op": "spike_element", "index": 3, "value": -2.0, "input": 1}]),
    dict(seed=8, transforms=[{"op": "nan_element", "index": 5}]),
    dict(seed=8, transforms=[{"op": "nan_element", "input": 0}]),
    dict(seed=9, transforms=[{"op": "quantize", "levels": 4}]),
    dict(seed=9, transforms=[{"op": "quantize", "input": 1}]),
    dict(seed=10, transforms=[{"op": "near_constant", "eps": 1e-4}]),
    dict(seed=10, transforms=[{"op": "near_constant", "input": 0}]),
    dict(seed=11, base="loguniform", params=(1e-2, 1e2),
         transforms=[{"op": "spike", "value": 1e3}, {"op": "nan_element", "index": 0, "input": 1}]),
    dict(seed=12, shape={"M": 33}),  # input sizes only
    dict(seed=13, base="normal", params=(1.0, 0.5), shape={"K": 17, "N": 9}),
]


def test_every_base_and_transform_is_rebuilt_bit_for_bit(tmp_path: Path, demo: ProblemSet) -> None:
    problem = demo.get("demo/4")
    specs = [make(problem, **kw) for kw in MATMUL_SPECS]
    assert {s.base for s in specs} == set(BASES) - {"kbv-hidden"}
    assert {op for s in specs for op, _ in s.transforms} == set(TRANSFORMS)
    path = kbv_layout(tmp_path / "kbv", problem, hidden_test_source(problem, specs, NOTE))
    got = run_as_kbv(path)
    want = expected(problem, specs)
    assert len(got) == len(specs)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert torch.isnan(got[10][0].view(-1)[5]) and got[17][0].shape == (33, 512)  # the cases are what they say


def test_a_batch_size_override_and_integer_inputs(tmp_path: Path, demo: ProblemSet) -> None:
    leaky = demo.get("demo/1")
    specs = [make(leaky, 21, shape={"batch_size": 3}), make(leaky, 22, "uniform", (-1.0, 1.0), shape={"dim": 1001})]
    got = run_as_kbv(kbv_layout(tmp_path / "kbv", leaky, hidden_test_source(leaky, specs, NOTE)))
    for g, w in zip(got, expected(leaky, specs)):
        assert_same(g, w)
    assert got[0][0].shape == (3, 4096)

    gather = tmp_problem(tmp_path, GATHER)
    specs = [make(gather, 1), make(gather, 2, "normal", (0.0, 3.0), transforms=[{"op": "scale", "by": -1.0}]),
             make(gather, 3, shape={"rows": 9, "k": 5}), make(gather, 4, shape={"cols": 2, "n": 7})]
    got = run_as_kbv(kbv_layout(tmp_path / "kbv", gather, hidden_test_source(gather, specs, NOTE)))
    for g, w in zip(got, expected(gather, specs)):
        assert_same(g, w)
    assert got[0][1].dtype == torch.int64 and got[2][2] == 5 and got[3][1].shape == (7,)


def test_a_kbv_hidden_config_is_rebuilt_from_the_embedded_published_file(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "kbv"
    (checkout / "hidden_tests" / "level1").mkdir(parents=True)
    (checkout / "hidden_tests" / "level1" / "1_hidden.py").write_text(PUBLISHED)
    (checkout / "KernelBench" / "level1").mkdir(parents=True)
    (checkout / "KernelBench" / "level1" / "1_Gather.py").write_text(HEADER + GATHER)  # KBV's copy: a header more
    problem = tmp_problem(tmp_path, GATHER)
    monkeypatch.setenv("KBM_KBV", str(checkout))
    published = read_hidden(checkout, problem)
    specs = [make(problem, 5, "kbv-hidden", hidden={"config": k, "sha256": published.sha256}) for k in (2, 0, 1)]
    specs.append(make(problem, 6, "kbv-hidden", hidden={"config": 1, "sha256": published.sha256},
                      transforms=[{"op": "spike_element", "index": -1, "value": 1e4}]))
    specs.append(make(problem, 7, "normal", (0.0, 1.0)))
    want = expected(problem, specs)

    # the folder a maintainer drops over the checkout: the emitted file takes the published one's place
    suite = write_hidden_tests(tmp_path / "out", {problem.key: specs}, KbvAdmission({problem.key: problem}, {}), NOTE)
    target = tmp_path / "kbv2"
    shutil.copytree(checkout / "KernelBench", target / "KernelBench")
    shutil.copytree(suite.folder, target / "hidden_tests")
    got = run_as_kbv(target / "hidden_tests" / "level1" / "1_hidden.py")
    for g, w in zip(got, want):
        assert_same(g, w)
    assert not torch.equal(got[0][0], got[1][0])  # configs 2 and 0 differ: the index is honoured

    # a copy that differs from the one the published file was hashed with, by a comment only: its configs
    # could differ, so the kbv-hidden input is refused (the code check alone would pass it)
    (target / "KernelBench" / "level1" / "1_Gather.py").write_text("# another header\n" + GATHER)
    with pytest.raises(RuntimeError, match=r"^.*1_hidden\.py: the published hidden test and its problem copy are not "
                                           r"those kbm's input was made from") as e:
        run_as_kbv(target / "hidden_tests" / "level1" / "1_hidden.py")
    assert "\n" not in str(e.value)


def test_the_file_refuses_a_problem_copy_whose_code_differs(tmp_path: Path, demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    text = hidden_test_source(problem, [make(problem, 1)], NOTE)
    edited = problem.source.replace("dim = 4096", "dim = 4097")
    assert edited != problem.source
    path = kbv_layout(tmp_path / "kbv", problem, text, copy=edited)
    copy = tmp_path / "kbv" / "KernelBench" / "demo" / "1_LeakyReLU.py"
    with pytest.raises(RuntimeError) as e:
        run_as_kbv(path)
    assert str(e.value).startswith(f"{path.parent}/../../KernelBench/demo/1_LeakyReLU.py: not the problem kbm "
                                   "measured this suite on: its code differs")
    assert "\n" not in str(e.value) and copy.is_file()


def test_the_file_accepts_a_copy_that_differs_only_by_comments_and_blank_lines(tmp_path: Path,
                                                                               demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    specs = [make(problem, 1), make(problem, 2, "normal", (0.0, 1.0))]
    copy = HEADER + problem.source.replace("batch_size = 16\n", "\n\nbatch_size = 16  # rows\n").replace("\n", "\r\n")
    got = run_as_kbv(kbv_layout(tmp_path / "kbv", problem, hidden_test_source(problem, specs, NOTE), copy=copy))
    for g, w in zip(got, expected(problem, specs)):
        assert_same(g, w)


@pytest.mark.parametrize("edit, same", [
    (lambda s: HEADER + s, True),
    (lambda s: s.replace("return [x]", "return [x]  # the input"), True),
    (lambda s: s + "\n\n\n", True),
    (lambda s: s.replace("dim = 4096", "dim = 4096.0"), False),
    (lambda s: s.replace("torch.rand(", "torch.randn("), False),
    (lambda s: s.replace('"""LeakyReLU', '"""Leaky ReLU'), False),  # a docstring is code
])
def test_the_code_digest_ignores_comments_and_blank_lines_only(demo: ProblemSet, edit, same: bool) -> None:
    source = demo.get("demo/1").source
    assert edit(source) != source
    assert (code_digest(edit(source)) == code_digest(source)) is same


def test_an_f_string_is_one_token_for_the_digest() -> None:
    a = 'name = "x"\nlabel = f"{name!r}: {1 + 2:>4}"  # said\n'
    assert code_digest(a) == code_digest("# header\n" + a)
    assert code_digest(a) != code_digest(a.replace(":>4", ":>5"))


@pytest.mark.kernelbench
@needs_kbv
def test_in_a_kernelbench_verified_checkout(tmp_path: Path, kernelbench_problems: ProblemSet) -> None:
    # KBV's copies differ from KernelBench's by a header in every file, and in code in these seven
    problems = {k: p for k, p in kernelbench_problems.problems().items() if p.origin == "kernelbench"}
    copies = {key: KBV_CHECKOUT / "KernelBench" / p.level / p.path.name for key, p in problems.items()}
    assert len(copies) == 250 and all(c.is_file() for c in copies.values())
    differ = sorted(k for k, p in problems.items() if code_digest(copies[k].read_text()) != code_digest(p.source))
    assert differ == ["level1/100_HingeLoss", "level1/12_Matmul_with_diagonal_matrices_", "level1/90_cumprod",
                      "level1/92_cumsum_exclusive", "level1/97_ScaledDotProductAttention", "level3/35_LSTM",
                      "level3/47_NetVladNoGhostClusters"]
    relu = kernelbench_problems.get("level1/19")
    assert relu.source != copies[relu.key].read_text()  # the header
    specs = [make(relu, 1, shape={"batch_size": 2, "dim": 33}),
             make(relu, 2, "normal", (0.0, 1.0), shape={"batch_size": 3, "dim": 5},
                  transforms=[{"op": "nan_element", "index": -1}])]
    text = hidden_test_source(relu, specs, NOTE)
    got = run_as_kbv(kbv_layout(tmp_path / "kbv", relu, text, copy=copies[relu.key].read_text()))
    for g, w in zip(got, expected(relu, specs)):
        assert_same(g, w)
    sdpa = kernelbench_problems.get("level1/97")  # KBV's copy draws fp16 on cuda
    text = hidden_test_source(sdpa, [make(sdpa, 1, shape={"batch_size": 1})], NOTE)
    with pytest.raises(RuntimeError, match="not the problem kbm measured this suite on"):
        run_as_kbv(kbv_layout(tmp_path / "kbv", sdpa, text, copy=copies[sdpa.key].read_text()))


# --- what KBV's format cannot say ----------------------------------------------------------------

@pytest.mark.parametrize("shape, words", [
    ({"in_channels": 3}, "get_init_inputs() reads in_channels"),
    ({"out_channels": 5, "batch_size": 2}, "get_init_inputs() reads out_channels"),
])
def test_an_override_of_a_size_the_model_is_built_from_is_not_expressible(demo: ProblemSet, shape: dict,
                                                                          words: str) -> None:
    problem = demo.get("demo/7")
    why = unexpressible(make(problem, 1, shape=shape), problem.source)
    assert why is not None and why.startswith("the shape override") and words in why


def test_an_override_reaching_the_model_through_a_derived_constant_or_class_model(tmp_path: Path) -> None:
    problem = tmp_problem(tmp_path, DERIVED, "Derived")
    why = unexpressible(make(problem, 1, shape={"out_channels": 4}), problem.source)
    assert why is not None and "get_init_inputs() reads bias_shape (computed from out_channels)" in why
    why = unexpressible(make(problem, 1, shape={"width": 7}), problem.source)
    assert why is not None and "class Model reads width" in why
    # batch_size and dim only size the inputs (`dim` in the class is a parameter, not the constant)
    assert unexpressible(make(problem, 1, shape={"batch_size": 4, "dim": 3}), problem.source) is None
    assert unexpressible(make(problem, 1, shape={"out_channels": 3}), problem.source) is None  # the value it has


def test_re_drawn_parameters_and_unreadable_constants_are_not_expressible(tmp_path: Path, demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    why = unexpressible(make(problem, 1, "normal", (0.0, 1.0), reinit="normal"), problem.source)
    assert why is not None and "reinit = normal" in why
    assert unexpressible(make(problem, 1, shape={"batch_size": 2}), problem.source) is None
    computed = tmp_problem(tmp_path, problem.source.replace("dim = 4096", "dim = int('4096')"), "Computed")
    why = unexpressible(make(computed, 1, shape={"batch_size": 2}), computed.source)
    assert why is not None and "not plain arithmetic on literals" in why
    assert unexpressible(make(computed, 1), computed.source) is None


@pytest.mark.parametrize("op", sorted(TRANSFORMS))
def test_every_transform_kbm_knows_is_one_the_files_rebuild(demo: ProblemSet, op: str) -> None:
    problem = demo.get("demo/1")
    assert unexpressible(InputSpec.make(problem.key, 1, transforms=[{"op": op}]), problem.source) is None


def test_admission_refuses_a_kbv_hidden_input_without_its_checkout_and_a_changed_file(demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    admission = KbvAdmission({problem.key: problem}, {problem.key: {"source_hash": problem.source_hash}})
    assert admission(problem, make(problem, 1))
    hidden = InputSpec.make(problem.key, 1, "kbv-hidden", hidden={"config": 0, "sha256": "0" * 64}, label="D1")
    assert not admission(problem, hidden)
    assert admission.left_out[-1].label == "D1" and "--kbv PATH or KBM_KBV" in admission.left_out[-1].reason
    changed = KbvAdmission({problem.key: problem}, {problem.key: {"source_hash": "f" * 64}})
    assert not changed(problem, make(problem, 1))
    (line,) = changed.left_out
    assert line.label is None and "is not the one the store measured" in line.reason
    absent = KbvAdmission({}, {})
    assert not absent(problem, make(problem, 1)) and "no problem file here" in absent.left_out[0].reason


def conv_store(tmp_path: Path, demo: ProblemSet) -> tuple[Store, list[InputSpec]]:
    """demo/7 with five inputs over 30 mutants: re-drawn parameters kill 0-14, a model-changing shape
    kills 10-24 (a model KBV's harness cannot build), a batch-size shape 0-9, two scalings 15-22 and 25-29."""
    problem = demo.get("demo/7")
    store = Store(tmp_path / "s.db")
    store.record_problem(problem)
    specs = [make(problem, 1, "normal", (0.0, 1.0), reinit="normal", label="reinit"),
             make(problem, 2, shape={"in_channels": 3}, label="in_channels"),
             make(problem, 3, shape={"batch_size": 2}, label="batch"),
             make(problem, 4, transforms=[{"op": "scale", "by": -1.0}], label="negated"),
             make(problem, 5, transforms=[{"op": "scale", "by": 3.0}], label="tripled")]
    kills = [set(range(0, 15)), set(range(10, 25)), set(range(0, 10)), set(range(15, 23)), set(range(25, 30))]
    store.record_inputs(specs, "test")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for s in specs:
        store.record_input_check("h", run, {"input": s.id, "valid": True, "outcome": "pass", "margin": 1e-6,
                                            "max_abs": 1e-6})
    cells = []
    for m in range(30):
        store.db["mutants"].insert({"id": f"m{m:02d}", "problem": problem.key, "substrate_hash": "h", "rule": "r",
                                    "family": "arithmetic", "status": "distinct", "name": f"m{m:02d}"})
        cells += [{"mutant": f"m{m:02d}", "input": s.id, "outcome": "pass", "margin": 0.9 if m in k else 1e-7}
                  for s, k in zip(specs, kills)]
    store.record_cells(run, cells)
    return store, specs


def test_the_suite_is_chosen_only_among_expressible_inputs(tmp_path: Path, demo: ProblemSet) -> None:
    store, specs = conv_store(tmp_path, demo)
    (mx,) = load_matrices(store)
    plain = budget_curve([mx], 1e-2, [2])
    assert set(plain.suites[2]["demo/7_Conv2d"]) == {specs[0].id, specs[1].id}  # without the filter: the two big ones
    admission = KbvAdmission(demo.problems(), store.problem_rows())
    kbv = budget_curve([mx], 1e-2, [1, 2, 3, 4], admit=admission)
    assert kbv.witnessed == plain.witnessed == 30  # the same denominator
    assert kbv.suites[2]["demo/7_Conv2d"] == [specs[2].id, specs[3].id]
    assert not {specs[0].id, specs[1].id} & set().union(*kbv.suites[4].values())
    assert kbv.full[1] == pytest.approx(100 * 18 / 30)
    reasons = {x.label: x.reason for x in admission.left_out}
    assert set(reasons) == {"reinit", "in_channels"} and "reinit = normal" in reasons["reinit"]
    assert "get_init_inputs() reads in_channels" in reasons["in_channels"]


# --- the command ---------------------------------------------------------------------------------

def test_cli_format_kbv_writes_the_files_the_protocol_and_the_note(tmp_path: Path, demo: ProblemSet) -> None:
    store, specs = conv_store(tmp_path, demo)
    store.close()
    out = tmp_path / "suite"
    # an earlier suite's file goes (it would be copied into KBV with this one); a file of someone else's stays
    earlier = out / "hidden_tests" / "demo" / "1_hidden.py"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(hidden_test_source(demo.get("demo/1"), [make(demo.get("demo/1"), 1)], NOTE))
    (out / "hidden_tests" / "demo" / "2_hidden.py").write_text("def get_hidden_inputs():\n    return []\n")
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "suite", "--budget", "2", "--format", "kbv",
                                      "--out", str(out), "--splits", "0"])
    assert result.exit_code == 0, result.output
    assert "demo/7_Conv2d: left out 'reinit': re-drawn parameters (reinit = normal)" in result.output
    assert "demo/7_Conv2d: left out 'in_channels': the shape override (in_channels = 3) changes the model" \
        in result.output
    assert "KB_FP32_TOL=0.01" in result.output
    (protocol,) = load_protocols(out)
    chosen = [s.id for s in protocol.specs(demo.get("demo/7"))]
    assert chosen == [specs[2].id, specs[3].id]
    hidden = out / "hidden_tests" / "demo" / "7_hidden.py"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "hidden_tests/KBM_SUITE.md", "hidden_tests/demo/2_hidden.py", "hidden_tests/demo/7_hidden.py", "protocol.toml"]
    text = hidden.read_text()
    assert "atol = rtol = 0.01" in text and "strict-fp32" in text and "KB_FP32_TOL=0.01" in text
    assert f"config 1: {specs[2].id}: batch" in text and f"config 2: {specs[3].id}: negated" in text
    problem = demo.get("demo/7")
    kbv_layout(tmp_path / "kbv", problem, text)
    got = run_as_kbv(tmp_path / "kbv" / "hidden_tests" / "demo" / "7_hidden.py")
    for g, w in zip(got, expected(problem, [specs[2], specs[3]])):
        assert_same(g, w)
    note = " ".join((out / "hidden_tests" / "KBM_SUITE.md").read_text().split())  # as one line
    for words in (f"store `{tmp_path / 's.db'}`", "--budget 2", "atol = rtol = 0.01", "strict-fp32",
                  "KB_FP32_TOL=0.01", "TF32", "demo/7_Conv2d: input 'reinit': re-drawn parameters",
                  "demo/7_Conv2d: input 'in_channels': the shape override", "`demo/7_hidden.py`: demo/7_Conv2d"):
        assert words in note, words


def test_cli_format_protocol_is_unchanged(tmp_path: Path, demo: ProblemSet) -> None:
    store, specs = conv_store(tmp_path, demo)
    (mx,) = load_matrices(store)
    before = emit_protocol(budget_curve([mx], 1e-2, [2]).suites[2], store, "suite-2", 1e-2)  # today's output
    store.close()
    for extra in ([], ["--format", "protocol"]):
        out = tmp_path / f"suite{len(extra)}"
        result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "suite", "--budget", "2",
                                          "--out", str(out), "--splits", "0", *extra])
        assert result.exit_code == 0, result.output
        assert (out / "protocol.toml").read_text() == before
        assert not (out / "hidden_tests").exists() and "left out" not in result.output
    assert 'label = "reinit"' in before and 'label = "in_channels"' in before  # unfiltered: both chosen


def test_cli_format_kbv_on_the_demo_store(tmp_path: Path, demo: ProblemSet) -> None:
    out = tmp_path / "suite"
    result = CliRunner().invoke(cli, ["--store", "@demo", "suite", "--budget", "2", "--format", "kbv",
                                      "--out", str(out), "--splits", "0", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert len(report["hidden_tests"]) == 8 and report["left_out"]
    assert all(x["label"] for x in report["left_out"])  # inputs left out, never a whole problem
    (protocol,) = load_protocols(out)
    for key in report["hidden_tests"]:
        problem = demo.get(key)
        specs = protocol.specs(problem)
        assert specs and all(unexpressible(s, problem.source) is None for s in specs)
        text = (out / hidden_test_path(problem)).read_text()
        got = run_as_kbv(kbv_layout(tmp_path / "kbv", problem, text))
        for g, w in zip(got, expected(problem, specs)):
            assert_same(g, w)


@pytest.mark.parametrize("module", ["kbm_toolkit.problems.hidden_writer", "kbm_toolkit.analysis.suite"])
def test_the_writer_and_the_suite_do_not_import_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_stressed_input_is_one_kbvs_harness_cannot_run() -> None:
    from kbm_toolkit.problems.hidden_writer import unexpressible
    from kbm_toolkit.problems.input_spec import InputSpec

    spec = InputSpec.make("demo/1_LeakyReLU", 42, stress="memory")
    assert unexpressible(spec, "batch_size = 16\n") == ("memory stress beside the launch: KBV's harness runs "
                                                         "nothing beside a candidate")
    assert unexpressible(InputSpec.make("demo/1_LeakyReLU", 42), "batch_size = 16\n") is None
