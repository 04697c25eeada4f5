from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.problems.pack import kernelbench_root
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.problems.tensors import build_model, draw_inputs

from support import FIXTURES


@pytest.fixture
def fixture_set() -> ProblemSet:
    return ProblemSet([("builtin", FIXTURES / "problems")])


def test_trial_seeds_follow_the_official_draw() -> None:
    # KernelBench: manual_seed(42), then one randint(0, 2**32 - 1) per trial.
    torch.manual_seed(42)
    expected = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    assert trial_seeds(5) == expected
    assert len(set(expected)) == 5


def test_seeds_are_torchs_draws_without_torch() -> None:
    import subprocess
    import sys

    g = torch.Generator().manual_seed(7)
    assert trial_seeds(3, seed=7) == [torch.randint(0, 2**32 - 1, (1,), generator=g).item() for _ in range(3)]
    torch.manual_seed(42)
    assert trial_seeds(700)[-5:] == [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(700)][-5:]
    code = "import sys; from kbm_toolkit.problems.seeds import trial_seeds; trial_seeds(105); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_weights_are_drawn_once_under_seed_42(fixture_set: ProblemSet) -> None:
    module = fixture_set.get("good/1").load()
    a, b = build_model(module), build_model(module)
    torch.manual_seed(42)  # KernelBench: set_seed(42) right before Model(*init)
    manual = module.Model(0.5)
    assert torch.equal(a.linear.weight, b.linear.weight)
    assert torch.equal(a.linear.weight, manual.linear.weight)


def test_integer_and_bool_inputs_keep_their_dtype(fixture_set: ProblemSet) -> None:
    x, mask, targets = draw_inputs(fixture_set.get("good/1_Masked").load(), 7)
    assert (x.dtype, mask.dtype, targets.dtype) == (torch.float32, torch.bool, torch.int64)


def test_same_seed_same_inputs_other_seed_other_inputs(fixture_set: ProblemSet) -> None:
    module = fixture_set.get("good/1").load()
    assert torch.equal(draw_inputs(module, 3)[0], draw_inputs(module, 3)[0])
    assert not torch.equal(draw_inputs(module, 3)[0], draw_inputs(module, 4)[0])


def test_constants_are_found_including_chained_assignments(fixture_set: ProblemSet) -> None:
    constants = fixture_set.get("good/1").load().constants
    assert constants == {"batch": 4, "dim": 8, "rows": 3, "cols": 3, "scale": 0.5}


def test_constant_override_changes_inputs_and_model(fixture_set: ProblemSet) -> None:
    module = fixture_set.get("good/1").load({"batch": 2, "dim": 5})
    x, _, _ = draw_inputs(module, 0)
    assert x.shape == (2, 5)
    assert build_model(module).linear.weight.shape == (5, 5)


def test_unknown_override_names_the_file_and_the_constants(fixture_set: ProblemSet) -> None:
    with pytest.raises(ProblemError) as e:
        fixture_set.get("good/1").load({"width": 3})
    assert "1_Masked.py" in e.value.line() and "'width'" in e.value.line() and "batch" in e.value.line()


@pytest.mark.parametrize("ref, words", [
    ("bad/1_SyntaxError", "1_SyntaxError.py:2: syntax error"),         # line number of the fault
    ("bad/2_NoGetInputs", "missing get_inputs"),                        # contract function absent
    ("bad/3_RaisesOnImport", "raised ZeroDivisionError"),               # module-level code fails
])
def test_malformed_problem_files_fail_with_file_and_reason(fixture_set: ProblemSet, ref: str, words: str) -> None:
    with pytest.raises(ProblemError) as e:
        fixture_set.get(ref).load()
    assert words in e.value.line()
    assert ref.split("/")[1] in e.value.line()


def test_get_inputs_must_return_a_list(fixture_set: ProblemSet) -> None:
    with pytest.raises(ProblemError, match="get_inputs\\(\\) must return a list"):
        draw_inputs(fixture_set.get("bad/4").load(), 0)


@pytest.mark.parametrize("ref", ["good/1_Masked", "good/1", "1_Masked", "Masked"])
def test_problem_references_resolve(fixture_set: ProblemSet, ref: str) -> None:
    assert fixture_set.get(ref).key == "good/1_Masked"


def test_ambiguous_and_missing_references_say_so(fixture_set: ProblemSet) -> None:
    with pytest.raises(ProblemError, match="ambiguous"):
        fixture_set.get("1")
    with pytest.raises(ProblemError, match="no problem matches 'Nope'"):
        fixture_set.get("Nope")


def test_demo_set_spans_the_fault_families(demo: ProblemSet) -> None:
    names = " ".join(p.name for p in demo.select(level="demo")).lower()
    for word in ("relu", "softmax", "norm", "matmul", "argmax", "cumsum", "conv", "pool"):
        assert word in names


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path) -> None:
    with pytest.raises(ProblemError, match="not a KernelBench checkout"):
        kernelbench_root(tmp_path)


@pytest.mark.kernelbench
def test_every_kernelbench_level1_and_level2_problem_loads(kernelbench_problems: ProblemSet) -> None:
    problems = [p for p in kernelbench_problems.problems().values() if p.level in ("level1", "level2")]
    assert len(problems) == 200
    for p in problems:
        module = p.load()
        assert module.constants, p.key


def _identity_problem(root: Path, name: str, constants: str, inputs: str, init_inputs: str = "[]") -> Problem:
    """`root/t/1_<name>.py`: a model that returns its input, with these module constants and inputs."""
    level = root / "t"
    level.mkdir(exist_ok=True)
    (level / f"1_{name}.py").write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
        f"{constants}\n\ndef get_inputs():\n    return {inputs}\n\ndef get_init_inputs():\n    return {init_inputs}\n")
    return ProblemSet([("builtin", root)]).get("t/1")


def test_overrides_reach_derived_and_tuple_constants(tmp_path) -> None:
    problem = _identity_problem(tmp_path, "Derived",
                                "batch = 2\nout_channels = 8\ndepth, height, width = 4, 6, 6\nh2 = w2 = 5\n"
                                "bias_shape = (out_channels, 1, 1)",
                                "[torch.rand(batch, out_channels, depth, height, width)]", "[bias_shape]")
    module = problem.load({"out_channels": 3, "height": 7, "w2": 9})
    assert module.constants["bias_shape"] == (3, 1, 1)
    assert (module.constants["depth"], module.constants["height"], module.constants["width"]) == (4, 7, 6)
    assert (module.constants["h2"], module.constants["w2"]) == (5, 9)
    assert draw_inputs(module, 0)[0].shape == (2, 3, 4, 7, 6)


def test_toml_array_overrides_become_tuples(fixture_set: ProblemSet, tmp_path) -> None:
    problem = _identity_problem(tmp_path, "Shape", "input_shape = (4, 8)", "[torch.rand(*input_shape)]")
    module = problem.load({"input_shape": [3, 5]})
    assert module.constants["input_shape"] == (3, 5) and draw_inputs(module, 0)[0].shape == (3, 5)


def test_a_missing_problem_file_is_a_problem_error(tmp_path) -> None:
    with pytest.raises(ProblemError, match="cannot read the problem file"):
        Problem("level1/1_Gone", "level1", 1, "Gone", tmp_path / "1_Gone.py", "kernelbench").load()


def test_constants_read_without_running_agree_with_running_the_file() -> None:
    from kbm_toolkit.problems.constants import static_constants as _static_constants

    from support import KERNELBENCH

    read, unloadable = 0, []
    checkout = KERNELBENCH if (KERNELBENCH / "KernelBench").is_dir() else None
    problems = ProblemSet.discover(checkout).select()  # the built-in set, plus KernelBench's when checked out
    for problem in problems:
        static = _static_constants(problem.source)
        if static is not None:
            read += 1
            try:
                ran = problem.load().constants
            except ProblemError:
                unloadable.append(problem)
                continue
            assert static == ran, problem.key
    assert read >= len(problems) * 0.9  # the files are plain enough to read
    # only a level-3 file needing a package this machine lacks may fail to run
    assert [p.key for p in unloadable if p.level != "level3"] == []


def test_constants_fall_back_to_running_the_file_when_they_need_it(tmp_path) -> None:
    path = tmp_path / "1_Computed.py"
    path.write_text("import math\nimport torch\nN = int(math.sqrt(16))\nM = N * 2\n"
                    "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                    "def get_inputs():\n    return [torch.ones(N)]\ndef get_init_inputs():\n    return []\n")
    problem = Problem("t/1_Computed", "t", 1, "Computed", path, "test")
    assert problem.constants() == {"N": 4, "M": 8}


def test_a_store_keeps_the_constants_a_shape_hook_needs_so_it_works_without_the_file(tmp_path) -> None:
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.problems.problem import problem_from_row
    from kbm_toolkit.store import Store

    problem = _identity_problem(tmp_path, "Shape", "batch_size = 16\ninput_shape = (4, 8)",
                                "[torch.rand(batch_size, *input_shape)]")
    store = Store(tmp_path / "kbm.db")
    store.record_problem(problem)
    shapes = load_protocol("fuzz-shapes")
    from_file = [s.id for s in shapes.specs(problem)]
    problem.path.unlink()  # the store goes where the file does not
    row = store.db["problems"].get("t/1_Shape")
    stored = problem_from_row(row["key"], row)
    assert stored.constants() == {"batch_size": 16, "input_shape": (4, 8)}  # a tuple stays a tuple
    assert [s.id for s in shapes.specs(stored)] == from_file and len(from_file) > 5
    with pytest.raises(ProblemError, match="cannot read the problem file"):  # a row without them needs the file
        problem_from_row(row["key"], {**row, "constants": "not a literal ("}).constants()
