"""Benchmark packs: a benchmark of one's own (problems, substrates, a protocol, rules) loaded beside
kbm's by `--bench`, `KBM_BENCH` or an entry point, its keys under its name; every way a pack can be
wrong is one line naming the file, and nothing is stored."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.problems import pack as pack_module
from kbm_toolkit.problems.pack import GROUP, PackError, builtin_packs, load_pack
from kbm_toolkit.problems.problem import Problem, problem_from_row
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import has_substrate, substrate_for
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.store import Store

from support import KERNELBENCH, PACK_README_FILES, REPO, FakeEntryPoint, write_pack


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "mybench")


def only_line(result: Result) -> str:
    """The one line on stderr."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def listed(result: Result) -> dict[str, list[str]]:
    """`kbm problems`' lines by key: the rest of each line, split."""
    return {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}


# The README's worked example is the pack these tests load.

def test_the_readme_example_is_the_pack_tested() -> None:
    section = (REPO / "README.md").read_text().split("## Your own benchmark (packs)", 1)[1].split("\n## ", 1)[0]
    for path, text in PACK_README_FILES.items():
        assert path in section, path
        assert text.strip() in section, path


# Loading: --bench, before or after the command, KBM_BENCH, entry points.

def test_problems_lists_a_packs_problems_under_its_name(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "problems"])
    assert result.exit_code == 0, result.output
    rows = listed(result)
    assert rows["mybench/level1/1_MyRelu"] == ["mybench", "not", "gated"]
    assert rows["mybench/level1/2_Scale"] == ["mybench", "not", "gated"]
    assert rows["demo/1_LeakyReLU"][0] == "demo"  # kbm's own keep their keys


def test_problems_json_names_the_pack(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "problems", "--level", "mybench/level1", "--json"])
    assert result.exit_code == 0, result.output
    assert [(r["problem"], r["pack"], r["substrate"]) for r in json.loads(result.stdout)] == [
        ("mybench/level1/1_MyRelu", "mybench", True), ("mybench/level1/2_Scale", "mybench", True)]


@pytest.mark.parametrize("level, keys", [
    ("mybench/level1", ["mybench/level1/1_MyRelu", "mybench/level1/2_Scale"]),
    ("mybench", ["mybench/level1/1_MyRelu", "mybench/level1/2_Scale"]),  # a pack's name selects all its levels
    ("demo", ["demo/1_LeakyReLU"]),
])
def test_level_selects_a_packs_level(runner: CliRunner, bench: Path, level: str, keys: list[str]) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "problems", "--level", level])
    assert result.exit_code == 0, result.output
    assert list(listed(result))[:len(keys)] == keys
    assert all(k.startswith(keys[0].rsplit("/", 1)[0]) for k in listed(result))


def test_a_kernelbench_level_holds_none_of_a_packs(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "problems", "--level", "level1"])
    assert result.exit_code == 0, result.output
    assert "mybench" not in result.stdout


def test_bench_after_the_command_is_loaded(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["problems", "--level", "mybench", "--bench", str(bench)])
    assert result.exit_code == 0, result.output
    assert "mybench/level1/1_MyRelu" in listed(result)


def test_two_packs_at_once(runner: CliRunner, tmp_path: Path, bench: Path) -> None:
    other = write_pack(tmp_path / "other", "otherbench", {"rules/mybench.toml": None})
    result = runner.invoke(cli, ["--bench", str(bench), "problems", "--bench", str(other)])
    assert result.exit_code == 0, result.output
    assert {"mybench/level1/1_MyRelu", "otherbench/level1/1_MyRelu"} <= set(listed(result))


def test_kbm_bench_names_packs_by_a_path_list(runner: CliRunner, tmp_path: Path, bench: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    other = write_pack(tmp_path / "other", "otherbench", {"rules/mybench.toml": None})
    monkeypatch.setenv("KBM_BENCH", os.pathsep.join([str(bench), str(other)]))
    result = runner.invoke(cli, ["problems"])
    assert result.exit_code == 0, result.output
    assert {"mybench/level1/2_Scale", "otherbench/level1/2_Scale"} <= set(listed(result))


def test_the_same_pack_twice_loads_once(runner: CliRunner, bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBM_BENCH", str(bench))
    result = runner.invoke(cli, ["--bench", str(bench), "adapters"])
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()].count("mybench") == 1


def test_an_entry_point_names_a_pack(runner: CliRunner, bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = [FakeEntryPoint("mybench", lambda: bench, GROUP)]
    monkeypatch.setattr(pack_module, "entry_points", lambda group: plugins if group == GROUP else [])
    result = runner.invoke(cli, ["problems", "--level", "mybench"])
    assert result.exit_code == 0, result.output
    assert list(listed(result)) == ["mybench/level1/1_MyRelu", "mybench/level1/2_Scale"]


def test_a_plugin_named_like_a_built_in_pack_is_refused(runner: CliRunner, bench: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = [FakeEntryPoint("demo", lambda: bench, GROUP)]
    monkeypatch.setattr(pack_module, "entry_points", lambda group: plugins if group == GROUP else [])
    result = runner.invoke(cli, ["problems"])
    assert result.exit_code == 0, result.output
    assert "is named like kbm's built-in pack 'demo'" in only_line(result)
    assert "mybench/level1/1_MyRelu" not in result.stdout and "demo/1_LeakyReLU" in result.stdout


def test_a_plugin_that_fails_to_load_is_one_line(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Path:
        raise ImportError("no module named mybench_data")

    monkeypatch.setattr(pack_module, "entry_points", lambda group: [FakeEntryPoint("mybench", broken, GROUP)])
    result = runner.invoke(cli, ["problems"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "benchmark 'mybench' (fake_plugin:mybench) failed to load: ImportError" in only_line(result)


# Keys, and where a pack problem's substrate is found (here, and from a worker's record).

def test_a_pack_problem_carries_its_packs_name_and_substrate(bench: Path) -> None:
    problems = ProblemSet.discover(packs=[load_pack(bench)])
    problem = problems.get("MyRelu")
    assert (problem.key, problem.level, problem.number, problem.name, problem.origin) == (
        "mybench/level1/1_MyRelu", "mybench/level1", 1, "MyRelu", "mybench")
    assert problems.get("mybench/level1/2") == problems.get("Scale")
    assert substrate_for(problem).folder == bench / "substrates" / "level1" / "1_MyRelu"
    assert problems.pack_of(problem).root == bench


def test_a_pack_problem_survives_its_worker_record(bench: Path) -> None:
    problem = ProblemSet.discover(packs=[load_pack(bench)]).get("mybench/level1/1")
    again = Problem.from_record(json.loads(json.dumps(problem.record())))
    assert again == problem and again.substrate_dir == problem.substrate_dir
    assert substrate_for(again).content_hash == substrate_for(problem).content_hash
    row = problem.store_row()
    assert (row["key"], row["level"], row["origin"]) == ("mybench/level1/1_MyRelu", "mybench/level1", "mybench")
    assert problem_from_row(row["key"], {}).level == "mybench/level1"  # a row without its level still reads


def test_kbms_own_problems_are_packs_with_their_keys(demo: ProblemSet) -> None:
    assert [p.name for p in builtin_packs()] == ["demo"]
    problem = demo.get("demo/1")
    assert (problem.key, problem.level, problem.origin) == ("demo/1_LeakyReLU", "demo", "demo")
    assert has_substrate(problem) and substrate_for(problem).folder.name == "1_LeakyReLU"


@pytest.mark.kernelbench
def test_kernelbench_is_a_pack_with_kbms_substrates() -> None:
    problems = ProblemSet.discover(KERNELBENCH, packs=[])
    assert [p.name for p in problems.packs] == ["demo", "kernelbench"]
    problem = problems.get("level1/19")
    assert (problem.key, problem.origin) == ("level1/19_ReLU", "kernelbench")
    assert substrate_for(problem).folder.parent.name == "level1"
    assert not any(p.level.startswith("level4") for p in problems.problems().values())


def test_a_problem_without_a_substrate_is_listed_as_such(runner: CliRunner, tmp_path: Path) -> None:
    bench = write_pack(tmp_path / "mybench", replace={"substrates/level1/2_Scale/kernel.cu": None,
                                                      "substrates/level1/2_Scale/launch.py": None})
    assert not (bench / "substrates" / "level1" / "2_Scale").exists()
    result = runner.invoke(cli, ["--bench", str(bench), "problems", "--level", "mybench"])
    assert result.exit_code == 0, result.output
    assert listed(result)["mybench/level1/2_Scale"] == ["mybench", "no", "substrate"]


# The pack's protocol, its rule, its substrates.

def test_adapters_lists_the_packs_protocol(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "adapters", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.stdout) if r["adapter"] == "mybench"]
    assert row["name"] == "mybench" and row["path"] == str(bench / "adapters" / "mybench" / "protocol.toml")


def test_the_packs_protocol_judges_with_its_own_atol_and_rtol(bench: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBM_BENCH", str(bench))
    protocol = load_protocol("mybench")
    assert (protocol.judge.atol, protocol.judge.rtol) == (1e-5, 1e-3)
    problems = ProblemSet.discover()
    assert [s.label for s in protocol.specs(problems.get("mybench/level1/1"))] == [
        *(f"official trial {i}" for i in range(5)), "wide normal"]
    assert protocol.specs(problems.get("mybench/level1/2")) == []  # excluded by `<level>/<id>`


def test_rules_count_the_packs_rule_on_its_substrates(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "rules", "--sites", "--json"])
    assert result.exit_code == 0, result.output
    rules = {r["name"]: r for r in json.loads(result.stdout)}
    assert rules["relu-floor-one"]["sites"] == 1 and rules["relu-floor-one"]["family"] == "semantic"
    assert "plus2minus" in rules  # beside kbm's own


def test_mutate_stores_the_packs_rule_under_the_packs_keys(runner: CliRunner, tmp_path: Path, bench: Path) -> None:
    store = tmp_path / "s.db"
    result = runner.invoke(cli, ["--bench", str(bench), "--store", str(store), "mutate", "mybench/level1/1",
                                 "--ungated", "--rule", "relu-floor-one", "--workers", "1"])
    assert result.exit_code == 0, result.output
    (mutant,) = Store(store, readonly=True).mutants("mybench/level1/1_MyRelu")
    assert (mutant["rule"], mutant["status"]) == ("relu-floor-one", "distinct")
    listing = runner.invoke(cli, ["--bench", str(bench), "--store", str(store), "mutants", "--problem", "MyRelu"])
    assert listing.exit_code == 0 and listing.stdout.startswith(mutant["id"]), listing.output
    out = tmp_path / "stryker.json"
    exported = runner.invoke(cli, ["--bench", str(bench), "--store", str(store), "export", "--format", "stryker",
                                   "-a", "mybench", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    assert list(json.loads(out.read_text())["files"]) == ["mybench/level1/1_MyRelu/kernel.cu"]  # from its pack


def test_check_passes_on_the_packs_substrates(runner: CliRunner, bench: Path) -> None:
    result = runner.invoke(cli, ["--bench", str(bench), "check", "--level", "mybench"])
    assert result.exit_code == 0, result.output
    assert "2 of 2 substrates pass the static checks" in result.output


# Every way a pack is wrong: one line naming the file, BAD_INPUT, and no store made.

CLASH_WITH_KBV = PACK_README_FILES["adapters/mybench/protocol.toml"].replace('name = "mybench"', 'name = "kbv"')
CLASH_WITH_A_RULE = PACK_README_FILES["rules/mybench.toml"].replace("relu-floor-one", "gt2ge")


@pytest.mark.parametrize("replace, culprit, words", [
    ({"bench.toml": None}, "", "no bench.toml"),
    ({"bench.toml": "[bench\nname = 1"}, "bench.toml", "not valid TOML"),
    ({"bench.toml": '[bench]\nname = "mybench"\nversion = 2\n'}, "bench.toml", "unknown key 'version'"),
    ({"bench.toml": '[bench]\ndescription = "no name"\n'}, "bench.toml", "[bench] name must be"),
    ({"bench.toml": '[bench]\nname = "My Bench"\n'}, "bench.toml", "[bench] name must be"),
    ({"bench.toml": '[bench]\nname = "level1"\n'}, "bench.toml", "'level1' is reserved"),
    ({"bench.toml": '[bench]\nname = "kernelbench"\n'}, "bench.toml", "'kernelbench' is reserved"),
    ({"problems/level1/1_MyRelu.py": None}, "substrates/level1/1_MyRelu",
     "a substrate with no problem: there is no problems/level1/1_MyRelu.py"),
    ({"substrates/level1/2_Scale/launch.py": None}, "substrates/level1/2_Scale", "substrate is missing launch.py"),
    ({"adapters/mybench/protocol.toml": None, "adapters/mybench/notes.txt": "x"}, "adapters/mybench",
     "an adapter folder without protocol.toml"),
    ({"adapters/mybench/protocol.toml": CLASH_WITH_KBV}, "adapters/mybench/protocol.toml",
     "protocol 'kbv' of pack adapter 'mybench' is named like one of adapter 'kbv'"),
    ({"adapters/mybench/protocol.toml": None, "adapters/fuzz/protocol.toml": PACK_README_FILES[
        "adapters/mybench/protocol.toml"]}, "adapters/fuzz/protocol.toml", "adapter 'fuzz' of pack 'mybench'"),
    ({"rules/mybench.toml": CLASH_WITH_A_RULE}, "rules/mybench.toml", "rule 'gt2ge': name already used in"),
    ({"rules/mybench.toml": "[[rule]]\nname = 'x'\n"}, "rules/mybench.toml", "missing or non-string key 'family'"),
], ids=["no-manifest", "manifest-not-toml", "manifest-unknown-key", "no-name", "bad-name", "level-name",
        "kernelbench-name", "orphan-substrate", "incomplete-substrate", "adapter-without-protocol",
        "protocol-clash", "adapter-clash", "rule-clash", "bad-rule"])
def test_a_wrong_pack_is_one_line_naming_the_file(runner: CliRunner, tmp_path: Path, replace: dict, culprit: str,
                                                  words: str) -> None:
    bench = write_pack(tmp_path / "mybench", replace=replace)
    store = tmp_path / "s.db"
    result = runner.invoke(cli, ["--bench", str(bench), "--store", str(store), "mutate", "--ungated"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    line = only_line(result)
    assert line.startswith(f"Error: {bench / culprit}".rstrip("/") + ":") and words in line, line
    assert not store.exists()


def test_two_packs_of_one_name_are_one_line(runner: CliRunner, tmp_path: Path, bench: Path) -> None:
    twin = write_pack(tmp_path / "twin", replace={"rules/mybench.toml": None})
    store = tmp_path / "s.db"
    result = runner.invoke(cli, ["--bench", str(bench), "--bench", str(twin), "--store", str(store), "mutate"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert only_line(result) == (f"Error: {twin / 'bench.toml'}: pack name 'mybench' is taken by the pack at "
                                 f"{bench}: rename one")
    assert not store.exists()


def test_a_kbm_bench_folder_that_is_not_there_is_one_line(runner: CliRunner, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBM_BENCH", str(tmp_path / "gone"))
    result = runner.invoke(cli, ["problems"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert only_line(result).startswith(f"Error: {tmp_path / 'gone'}: no such folder")


def test_load_pack_raises_pack_error(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="no bench.toml"):
        load_pack(tmp_path)


# kbm init-bench: a pack that passes the static check as written.

def test_init_bench_writes_a_pack_that_passes_check(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "new"
    made = runner.invoke(cli, ["init-bench", str(folder), "--name", "mine"])
    assert made.exit_code == 0, made.output
    protocol = load_protocol(str(folder / "adapters" / "mine"))
    assert protocol.name == "mine" and protocol.judge.atol != protocol.judge.rtol
    result = runner.invoke(cli, ["--bench", str(folder), "check", "--level", "mine"])
    assert result.exit_code == 0, result.output
    assert re.search(r"ok +mine/level1/1_Softshrink", result.output)
    assert "1 of 1 substrates pass the static checks" in result.output
    listing = runner.invoke(cli, ["--bench", str(folder), "adapters"])
    assert [line.split()[:4] for line in listing.stdout.splitlines() if line.startswith("mine")] == [
        ["mine", "mine", f"{protocol.judge.atol:g}/{protocol.judge.rtol:g}", "strict-fp32"]]


def test_init_bench_names_the_pack_after_its_folder(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["init-bench", str(tmp_path / "Sparse_Ops")])
    assert result.exit_code == 0, result.output
    assert load_pack(tmp_path / "Sparse_Ops").name == "sparse_ops"
    assert (tmp_path / "Sparse_Ops" / "adapters" / "sparse_ops" / "protocol.toml").is_file()


@pytest.mark.parametrize("args, words", [
    (["--name", "level2"], "'level2' is reserved"),
    (["--name", "Bad Name"], "[bench] name must be"),
    (["--name", "kernelbench-head"], "pack name 'kernelbench-head' is an installed protocol's"),
    (["--name", "fuzz-shapes"], "pack name 'fuzz-shapes' is an installed protocol's"),
])
def test_init_bench_refuses_a_bad_name(runner: CliRunner, tmp_path: Path, args: list[str], words: str) -> None:
    result = runner.invoke(cli, ["init-bench", str(tmp_path / "new"), *args])
    assert result.exit_code == ExitCode.BAD_INPUT and words in only_line(result)
    assert not (tmp_path / "new").exists()


def test_init_bench_refuses_a_folder_that_is_not_empty(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = runner.invoke(cli, ["init-bench", str(tmp_path), "--name", "mine"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert only_line(result) == (f"Error: {tmp_path}: not an empty folder: init-bench writes a new pack into a "
                                 "new or empty one")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


# --kbv: a KernelBench-Verified checkout, for the code that reads KBM_KBV.

@pytest.mark.parametrize("where", ["before", "after"])
def test_kbv_sets_kbm_kbv_to_the_absolute_path(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               where: str) -> None:
    monkeypatch.setenv("KBM_KBV", "unset")
    monkeypatch.delenv("KBM_KBV")  # recorded both ways: what the command sets is undone after the test
    (tmp_path / "kbv").mkdir()
    monkeypatch.chdir(tmp_path)
    args = ["--kbv", "kbv", "problems"] if where == "before" else ["problems", "--kbv", "kbv"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert os.environ["KBM_KBV"] == str(tmp_path / "kbv")


def test_kbv_must_exist(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--kbv", str(tmp_path / "gone"), "adapters"])
    assert result.exit_code == ExitCode.USAGE and "does not exist" in result.output


def test_help_names_bench_and_kbv(runner: CliRunner) -> None:
    text = runner.invoke(cli, ["--help"]).output
    assert "--bench PATH" in text and "--kbv PATH" in text and "KBM_BENCH" in text and "init-bench" in text
