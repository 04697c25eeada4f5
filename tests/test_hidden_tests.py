"""KernelBench-Verified's published hidden tests: spec ids, parsing, errors, building, the kbv protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.errors import KbmError, ProblemError
from kbm_toolkit.problems import tensors
from kbm_toolkit.problems.hidden_tests import kbv_checkout, read_hidden
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem, problem_from_row
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.problems.tensors import set_seed, spec_inputs
from kbm_toolkit.protocols import builtin
from kbm_toolkit.protocols.protocol import Protocol, load_protocols, protocol_toml
from kbm_toolkit.store.shipped import open_shipped

from support import KBV_CHECKOUT, KERNELBENCH, hidden_source

HAS_KBV = (KBV_CHECKOUT / "hidden_tests" / "level1").is_dir()
needs_kbv = pytest.mark.skipif(not HAS_KBV, reason=f"needs a KernelBench-Verified checkout at {KBV_CHECKOUT}")

NOTE = ("kbv-reconstructed: no KernelBench-Verified checkout (--kbv PATH or KBM_KBV), "
        "so its hidden tests are kbm's reconstruction")

TINY = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, sign, index):
        return (x * sign[:, None]).sum(dim=1) + index


batch_size = 6
dim = 5


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size) * 2 - 1, torch.randint(0, 3, (batch_size,))]


def get_init_inputs():
    return []
'''

STANDARD = [("D1", "as drawn", "_get_inputs()"), ("D2", "times three", "_scale(_get_inputs(), 3.0)"),
            ("D3", "small", "_scale(_get_inputs(), 0.01)"), ("D4", "negated", "_scale(_get_inputs(), -1.0)")]

# a fifth config of its own, as level1/100's: a draw whose second input is replaced
PATTERNED = '''    # D5: alternating signs
    d5 = _get_inputs()
    n = d5[1].shape[0]
    pattern = torch.ones(n)
    pattern[::2] = -1.0
    d5[1] = pattern
    configs.append(d5)
'''




def fake_checkout(root: Path, source: str, filtered: object | None = None) -> tuple[Path, Problem]:
    """A KBV checkout with one hidden file (level1/1) and its problem copy, and kbm's copy of the problem."""
    (root / "kbv" / "hidden_tests" / "level1").mkdir(parents=True)
    (root / "kbv" / "KernelBench" / "level1").mkdir(parents=True)
    (root / "kbv" / "hidden_tests" / "level1" / "1_hidden.py").write_text(source)
    (root / "kbv" / "KernelBench" / "level1" / "1_Tiny.py").write_text(TINY)
    if filtered is not None:
        (root / "kbv" / "hidden_tests" / "filtered_configs.json").write_text(json.dumps(filtered))
    (root / "kb" / "level1").mkdir(parents=True)
    (root / "kb" / "level1" / "1_Tiny.py").write_text(TINY)
    kbm_copy = root / "kb" / "level1" / "1_Tiny.py"
    return root / "kbv", Problem("level1/1_Tiny", "level1", 1, "Tiny", kbm_copy, "kernelbench")


def kbv_protocols() -> dict[str, Protocol]:
    """kbv and kbv-reconstructed, loaded now (a protocol reads KBM_KBV when it is loaded and used)."""
    return {p.name: p for p in load_protocols(builtin.kbv())}


def hidden_spec(problem: Problem, checkout: Path, index: int, seed: int = 1234) -> InputSpec:
    tests = read_hidden(checkout, problem)
    return InputSpec.make(problem.key, seed, "kbv-hidden", hidden={"config": index, "sha256": tests.sha256})


def plain_configs(checkout: Path, problem: Problem, seed: int) -> list[list]:
    """`get_hidden_inputs()` run as KBV's eval runs it, under `seed`."""
    tests = read_hidden(checkout, problem)
    namespace = {"torch": torch, "__file__": str(tests.path), "__builtins__": __builtins__}
    exec(compile(tests.source, str(tests.path), "exec"), namespace)
    set_seed(seed)
    return namespace["get_hidden_inputs"]()


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
                                    for x, y in zip(a, b))


# --- spec ids -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["kernelbench", "demo"])
def test_every_shipped_input_keeps_its_id(name: str) -> None:
    store = open_shipped(name)
    rows = list(store.db["inputs"].rows)
    assert rows and all(InputSpec.from_record(json.loads(r["spec"])).id == r["id"] for r in rows)
    if name == "kernelbench":  # the 9,742 inputs from before hidden specs existed (and later ones), KBV's published ones
        hidden = [r for r in rows if json.loads(r["spec"])["base"] == "kbv-hidden"]
        assert len(rows) - len(hidden) >= 9742 and len(hidden) == 783


def test_only_a_hidden_spec_has_the_hidden_key() -> None:
    plain = InputSpec.make("level1/1_Tiny", 7, transforms=[{"op": "scale", "by": -1.0}])
    hidden = InputSpec.make("level1/1_Tiny", 7, "kbv-hidden", hidden={"config": 2, "sha256": "ab" * 32})
    assert "hidden" not in plain.record()
    assert hidden.record()["hidden"] == {"config": 2, "sha256": "ab" * 32}
    assert InputSpec.from_record(hidden.record()) == hidden and InputSpec.from_record(hidden.record()).id == hidden.id
    assert hidden.id != InputSpec.make("level1/1_Tiny", 7, "kbv-hidden", hidden={"config": 2, "sha256": "cd" * 32}).id


@pytest.mark.parametrize("kwargs, words", [
    ({"base": "kbv-hidden"}, "needs a hidden"),
    ({"hidden": {"config": 0, "sha256": "x"}}, "no other base"),
    ({"base": "kbv-hidden", "hidden": {"config": -1, "sha256": "x"}}, "non-negative"),
    ({"base": "kbv-hidden", "hidden": {"config": 0}}, "sha256"),
    ({"base": "kbv-hidden", "hidden": {"config": 0, "sha256": "x"}, "shape": {"dim": 3}}, "no shape"),
])
def test_a_malformed_hidden_spec_says_why(kwargs: dict, words: str) -> None:
    with pytest.raises(KbmError, match=words):
        InputSpec.make("level1/1_Tiny", 7, **kwargs)


# --- parsing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("configs, extra, count", [
    (STANDARD, "", 4),
    ([STANDARD[0], STANDARD[2], STANDARD[3]], "", 3),  # D2 filtered when the file was made
    (STANDARD, PATTERNED, 5),
])
def test_configs_are_counted_and_labelled_from_the_source(tmp_path: Path, configs: list, extra: str,
                                                          count: int) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(configs, extra))
    tests = read_hidden(checkout, problem)
    assert len(tests.configs) == count and [c.index for c in tests.configs] == list(range(count))
    assert [c.dist_id for c in tests.configs][:len(configs)] == [d for d, _, _ in configs]
    assert tests.configs[0].label == "hidden D1: as drawn"
    assert [c.calls for c in tests.configs] == [(k,) for k in range(count)]
    if extra:
        assert tests.configs[4].label == "hidden D5: alternating signs"
    assert tests.problem_copy == checkout / "KernelBench" / "level1" / "1_Tiny.py"


@needs_kbv
@pytest.mark.parametrize("key, dists", [
    ("level1/19_ReLU", ["D1", "D2", "D3", "D4"]),
    ("level1/90_cumprod", ["D1", "D3", "D4"]),
    ("level1/98_KLDivLoss", ["D1", "D2", "D3"]),
    ("level1/100_HingeLoss", ["D1", "D2", "D3", "D4", "D5"]),
])
def test_the_published_files_parse(key: str, dists: list[str]) -> None:
    level, name = key.split("/")
    problem = Problem(key, level, int(name.split("_")[0]), name.split("_", 1)[1], Path(key), "kernelbench")
    tests = read_hidden(KBV_CHECKOUT, problem)
    assert [c.dist_id for c in tests.configs] == dists and all(c.calls is not None for c in tests.configs)
    assert tests.problem_copy.name == f"{name}.py" and len(tests.sha256) == 64


def test_a_config_the_source_builds_its_own_way_is_built_by_the_plain_call(tmp_path: Path) -> None:
    custom = [STANDARD[0], ("D2", "redrawn", "[torch.randn_like(t) for t in _get_inputs()]"), STANDARD[3]]
    checkout, problem = fake_checkout(tmp_path, hidden_source(custom))
    tests = read_hidden(checkout, problem)
    assert [c.calls for c in tests.configs] == [(0,), (1,), None]  # D4 follows a config that is not plain


def test_a_config_appended_in_a_loop_cannot_be_counted(tmp_path: Path) -> None:
    loop = "    for f in (2.0, 4.0):\n        configs.append(_scale(_get_inputs(), f))\n"
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD[:1], loop))
    with pytest.raises(ProblemError, match="cannot count its configs") as e:
        read_hidden(checkout, problem)
    assert "\n" not in e.value.line()


def test_filtered_configs_json_drops_its_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    filtered = [{"level": 1, "pid": 1, "problem": "1_Tiny.py", "dist_id": "D2", "label": "x3", "reason": "NaN"},
                {"level": 1, "pid": 2, "problem": "2_Other.py", "dist_id": "D3", "label": "x0.01", "reason": "NaN"},
                {"level": 2, "pid": 1, "problem": "1_Other.py", "dist_id": "D4", "label": "x-1", "reason": "NaN"}]
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD), filtered)
    tests = read_hidden(checkout, problem)
    assert tests.filtered == {"D2"} and [c.dist_id for c in tests.kept] == ["D1", "D3", "D4"]
    monkeypatch.setenv("KBM_KBV", str(checkout))
    hidden = [s for s in kbv_protocols()["kbv"].specs(problem) if s.base == "kbv-hidden"]
    assert [dict(s.hidden)["config"] for s in hidden] == [0, 2, 3]  # indices into get_hidden_inputs()


def test_a_malformed_filtered_configs_json_is_one_line(tmp_path: Path) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD), {"D2": "not a list"})
    with pytest.raises(ProblemError, match="filtered_configs.json") as e:
        read_hidden(checkout, problem)
    assert "\n" not in e.value.line()


# --- errors -------------------------------------------------------------------------------------

def test_no_checkout_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD))
    spec = hidden_spec(problem, checkout, 0)
    with pytest.raises(ProblemError, match=r"needs a KernelBench-Verified checkout \(--kbv PATH or KBM_KBV\)") as e:
        spec_inputs(spec, problem.load())
    assert "\n" not in e.value.line()
    monkeypatch.setenv("KBM_KBV", str(tmp_path / "nowhere"))
    with pytest.raises(ProblemError, match="no hidden_tests/ folder") as e:
        kbv_checkout()
    assert "\n" not in e.value.line()


def test_a_missing_hidden_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD))
    spec = hidden_spec(problem, checkout, 0)
    (checkout / "hidden_tests" / "level1" / "1_hidden.py").unlink()
    monkeypatch.setenv("KBM_KBV", str(checkout))
    with pytest.raises(ProblemError, match="no hidden test file") as e:
        spec_inputs(spec, problem.load())
    assert "\n" not in e.value.line() and "1_hidden.py" in e.value.line()


@pytest.mark.parametrize("edited", ["hidden_tests/level1/1_hidden.py", "KernelBench/level1/1_Tiny.py"])
def test_an_edited_file_no_longer_builds_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edited: str) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD))
    spec = hidden_spec(problem, checkout, 1)
    monkeypatch.setenv("KBM_KBV", str(checkout))
    assert spec_inputs(spec, problem.load())
    path = checkout / edited
    path.write_text(path.read_text() + "\n# edited\n")
    with pytest.raises(ProblemError, match="not the one this input was made from") as e:
        spec_inputs(spec, problem.load())
    assert "\n" not in e.value.line()
    assert hidden_spec(problem, checkout, 1).id != spec.id  # the edited file is a new input


def test_a_hidden_file_for_another_problem_is_refused(tmp_path: Path) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD, copy="1_Other.py"))
    with pytest.raises(ProblemError, match="not kbm's level1/1_Tiny"):
        read_hidden(checkout, problem)


# --- building -----------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", ["", PATTERNED])
def test_config_k_is_element_k_of_the_plain_call_built_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             extra: str) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD, extra))
    monkeypatch.setenv("KBM_KBV", str(checkout))
    module = problem.load()
    count = len(read_hidden(checkout, problem).configs)
    plain = plain_configs(checkout, problem, 1234)
    calls = []
    original = tensors._hidden_call
    monkeypatch.setattr(tensors, "_hidden_call", lambda *a, **kw: calls.append(kw["shadow"]) or original(*a, **kw))
    for k in range(count):
        first = spec_inputs(hidden_spec(problem, checkout, k), module)
        assert same(first, spec_inputs(hidden_spec(problem, checkout, k), module))
        assert same(first, plain[k])
        assert first[2].dtype == torch.int64  # integer inputs keep their dtype
    assert calls == [True] * (2 * count)  # every config built with the others as shadows


def test_a_config_after_one_built_its_own_way_matches_the_plain_call(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    custom = [STANDARD[0], ("D2", "redrawn", "[torch.randn_like(t) for t in _get_inputs()[:2]]"), STANDARD[3]]
    checkout, problem = fake_checkout(tmp_path, hidden_source(custom))
    monkeypatch.setenv("KBM_KBV", str(checkout))
    plain = plain_configs(checkout, problem, 99)
    for k in range(3):  # D2 draws on its draw: shadowed it would not advance the RNG, so D4 takes the plain call
        assert same(spec_inputs(hidden_spec(problem, checkout, k, 99), problem.load()), plain[k])


def test_a_shadow_in_the_config_falls_back_to_the_plain_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # D3 takes D1's first input: built alone, D1's would be a shadow, so the plain call builds it
    reuse = "    # D3: a fresh draw and the first's x\n    configs.append(configs[0][:1] + _get_inputs()[1:])\n"
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD[:2], reuse))
    assert read_hidden(checkout, problem).configs[2].calls == (2,)
    monkeypatch.setenv("KBM_KBV", str(checkout))
    plain = plain_configs(checkout, problem, 5)
    calls = []
    original = tensors._hidden_call
    monkeypatch.setattr(tensors, "_hidden_call", lambda *a, **kw: calls.append(kw["shadow"]) or original(*a, **kw))
    assert same(spec_inputs(hidden_spec(problem, checkout, 2, 5), problem.load()), plain[2])
    assert calls == [True, False]


@pytest.mark.kernelbench
@needs_kbv
@pytest.mark.parametrize("key", ["level2/66", "level1/9"])
def test_a_published_config_builds_bit_identically(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    problem = ProblemSet.discover(KERNELBENCH).get(key)
    monkeypatch.setenv("KBM_KBV", str(KBV_CHECKOUT))
    specs = [s for s in kbv_protocols()["kbv"].specs(problem) if s.base == "kbv-hidden"]
    assert len(specs) == 4
    module = problem.load()
    plain = plain_configs(KBV_CHECKOUT, problem, specs[0].seed)
    for k, spec in enumerate(specs):
        built = spec_inputs(spec, module)
        assert same(built, spec_inputs(spec, module)) and same(built, plain[k])


# --- the kbv protocol ---------------------------------------------------------------------------

def reconstruction(problem: Problem) -> list[str]:
    """kbv's spec ids for `problem` as protocol.toml listed them before hidden.py."""
    seeds = trial_seeds(9)
    return ([InputSpec.make(problem.key, s).id for s in seeds[:5]]
            + [InputSpec.make(problem.key, seeds[5 + k], transforms=[{"op": "scale", "by": by}]).id
               for k, by in enumerate((1.0, 3.0, 0.01, -1.0))])


def test_without_a_checkout_kbv_is_the_reconstruction_the_shipped_store_holds(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_shipped("kernelbench")
    stored = {r["id"] for r in store.db["inputs"].rows}
    problems = [problem_from_row(r["key"], r) for r in store.db["problems"].rows]
    both = kbv_protocols()
    kbv, rec = both["kbv"], both["kbv-reconstructed"]
    assert kbv.note == NOTE and rec.note == ""
    checked = 0
    for problem in problems:
        ids = [s.id for s in kbv.specs(problem)]
        assert ids == [s.id for s in rec.specs(problem)]
        if ids and problem.key.startswith(("level1/", "level2/")):
            assert ids == reconstruction(problem) and set(ids) <= stored
            checked += 1
    assert checked > 150
    demo = ProblemSet.discover().get("demo/2")
    assert [s.id for s in kbv.specs(demo)][5:] == ["ff6731bcd20fb08b", "6004a6761749da23", "e5f876930fbe7ecc",
                                                   "07baaf6764b8d911"]
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD))
    monkeypatch.setenv("KBM_KBV", str(checkout))  # kbv-reconstructed ignores a checkout
    assert [s.id for s in kbv_protocols()["kbv-reconstructed"].specs(problem)] == reconstruction(problem)


def test_with_a_checkout_kbv_is_the_official_five_and_the_published_configs(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD, PATTERNED))
    monkeypatch.setenv("KBM_KBV", str(checkout))
    both = kbv_protocols()
    kbv, rec = both["kbv"], both["kbv-reconstructed"]
    assert str(checkout.resolve()) in kbv.note and rec.note == ""
    specs = kbv.specs(problem)
    assert [s.id for s in specs[:5]] == reconstruction(problem)[:5]
    hidden = specs[5:]
    assert [dict(s.hidden)["config"] for s in hidden] == [0, 1, 2, 3, 4]
    assert {s.seed for s in hidden} == {trial_seeds(6)[5]} and {s.base for s in hidden} == {"kbv-hidden"}
    assert hidden[1].label == "hidden D2: times three"
    assert [s.id for s in rec.specs(problem)] == reconstruction(problem)
    assert kbv.tolerance == rec.tolerance == 1e-3 and kbv.drop_nonfinite_reference and rec.drop_nonfinite_reference
    assert kbv.exclude == rec.exclude == ("level2/23", "level2/80", "level2/83")
    demo = ProblemSet.discover().get("demo/2")  # KBV has no hidden file for it: the official trials alone
    assert [s.label for s in kbv.specs(demo)] == [f"official trial {i}" for i in range(5)]


def test_a_hidden_spec_survives_a_written_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout, problem = fake_checkout(tmp_path, hidden_source(STANDARD))
    monkeypatch.setenv("KBM_KBV", str(checkout))
    specs = kbv_protocols()["kbv"].specs(problem)
    (tmp_path / "suite.toml").write_text(protocol_toml("suite", "a suite", 1e-3, {problem.key: specs}))
    assert [s.id for s in load_protocols(tmp_path / "suite.toml")[0].specs(problem)] == [s.id for s in specs]


@needs_kbv
def test_kbv_specs_are_listed_without_torch() -> None:
    code = ("import sys\n"
            "from kbm_toolkit.protocols.registry import load_protocol\n"
            "from kbm_toolkit.store.shipped import open_shipped\n"
            "from kbm_toolkit.problems.problem import problem_from_row\n"
            "store = open_shipped('kernelbench')\n"
            "kbv = load_protocol('kbv')\n"
            "n = sum(s.base == 'kbv-hidden' for r in store.db['problems'].rows "
            "for s in kbv.specs(problem_from_row(r['key'], r)))\n"
            "print(n > 700, 'torch' in sys.modules)")
    env = {**os.environ, "KBM_KBV": str(KBV_CHECKOUT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["True", "False"]


# --- the audit's note ---------------------------------------------------------------------------

def test_the_audit_says_when_kbv_is_the_reconstruction() -> None:
    result = CliRunner().invoke(cli, ["audit", "-a", "kbv", "--store", "@kernelbench"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    detects = next(i for i, line in enumerate(lines) if line.startswith("Detects"))
    assert NOTE in lines[:detects]  # one line, among the first: before the score
    report = json.loads(CliRunner().invoke(cli, ["audit", "-a", "kbv", "--json", "--store", "@kernelbench"]).stdout)
    assert report["note"] == NOTE
    other = json.loads(CliRunner().invoke(cli, ["audit", "-a", "kernelbench", "--json", "--store", "@demo"]).stdout)
    assert other["note"] == ""


@pytest.mark.parametrize("body, note", [
    ("def describe(config):\n    return f\"from {config['where']}\"\n", "from here"),
    ("def describe(config):\n    return None\n", ""),
    ("", ""),
])
def test_a_hook_module_describes_its_protocol(tmp_path: Path, body: str, note: str) -> None:
    (tmp_path / "extra.py").write_text(f"def specs(problem, constants, config):\n    return []\n{body}")
    (tmp_path / "protocol.toml").write_text('[protocol]\nname = "mine"\ntolerance = 1e-3\nmodule = "extra.py"\n'
                                            '[protocol.config]\nwhere = "here"\n')
    assert load_protocols(tmp_path)[0].note == note


def test_a_describe_that_raises_names_the_protocol(tmp_path: Path) -> None:
    (tmp_path / "extra.py").write_text("def specs(problem, constants, config):\n    return []\n"
                                       "def describe(config):\n    return config['missing']\n")
    (tmp_path / "protocol.toml").write_text('[protocol]\nname = "mine"\ntolerance = 1e-3\nmodule = "extra.py"\n')
    with pytest.raises(KbmError, match=r"mine: describe\(config\) raised KeyError"):
        load_protocols(tmp_path)
