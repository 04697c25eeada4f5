"""`kbm run --shard K/N` on copies of one pool store, folded back by `kbm merge`: the same store as
one run (no GPU: the fake evaluator)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.errors import OptionError
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.evaluation.shard import Shard
from kbm_toolkit.judging import PYTORCH_DEFAULT
from kbm_toolkit.mutation.campaign import mutate_problems
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import Store, copy_store

from support import REPO

RULES = [r for r in load_rules() if r.name in ("mul2div", "plus2minus", "minus2plus", "negate-store")]
WANTED = [(PYTORCH_DEFAULT, "output", 1.0)]
"""The margins every run here asks for; the pool's first run asked for none (checks stored before m013)."""


def specs_for(problem) -> list[InputSpec]:
    return [InputSpec.make(problem.key, seed, label=f"trial {seed}") for seed in (1, 2, 3)]


def fake(**options: Any) -> RunOptions:
    return RunOptions(**{"target": "fake_evaluator:cell_task", "rules": RULES, "deadline": lambda _: 1.5,
                         "margins": WANTED, **options})


def demo_problems() -> list:
    return ProblemSet.discover().select((), "demo")


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """The demo pool under RULES, as `kbm mutate` leaves it, plus a first run of demo/3 that stored
    its checks without margins; and a behaviour for the fake evaluator (a probe crash, a crash, a
    CUDA error) on mutants of three problems."""
    path = tmp_path_factory.mktemp("pool") / "pool.db"
    with pytest.MonkeyPatch.context() as mp:  # module scope: conftest's own isolation is not up yet
        mp.setenv("KBM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        mp.setenv("KBM_FAKE", "{}")
        mp.syspath_prepend(str(REPO / "tests"))
        store = Store(path)
        mutate_problems(store, demo_problems(), "sm_90", workers=1, require_gate=False, rules=RULES)
        demo3 = ProblemSet.discover().get("demo/3")
        run_evaluation(store, [demo3], specs_for, "test", "sm_90", {"gpu": "fake"}, fake(margins=[]))
        distinct = {p.key: [r["id"] for r in store.mutants(p.key, status="distinct")] for p in demo_problems()}
        store.close()
    behaviour = {distinct["demo/7_Conv2d"][0]: "probe-crash", distinct["demo/4_Matmul"][1]: "crash",
                 distinct["demo/2_Softmax"][2]: "poison"}
    yield path, behaviour


def state(store: Store) -> dict[str, Any]:
    """Everything a run writes that a merge must carry, keyed so two stores compare."""
    return {
        "cells": {(r["mutant"], r["input"]): (r["outcome"], r["margin"], r["max_abs"], r["margins"])
                  for r in store.db["cells"].rows},
        "mutants": {r["id"]: (r["status"], r["message"]) for r in store.db["mutants"].rows},
        "checks": {(r["input"], r["substrate_hash"]): (r["valid"], r["margin"], json.loads(r["margins"] or "{}"))
                   for r in store.db["input_checks"].rows},
        "inputs": {r["id"] for r in store.db["inputs"].rows},
        "shares": {r["key"]: (r["sample"], r["full_rows"]) for r in store.db["problems"].rows},
    }


def copy(pool: Path, to: Path) -> Path:
    copy_store(pool, to)
    return to


def run(path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: dict[str, str], **options: Any) -> Any:
    monkeypatch.setenv("KBM_FAKE", json.dumps(behaviour))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    store = Store(path)
    try:
        return run_evaluation(store, demo_problems(), specs_for, "test", "sm_90", {"gpu": "fake"}, fake(**options))
    finally:
        store.close()


@pytest.mark.parametrize("sample", [None, 0.5])
def test_two_shards_merged_are_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       pool: tuple[Path, dict[str, str]], sample: float | None) -> None:
    path, behaviour = pool
    whole = copy(path, tmp_path / "whole.db")
    run(whole, monkeypatch, behaviour, sample=sample)
    shards = [copy(path, tmp_path / f"shard-{k}.db") for k in range(2)]
    summaries = [run(s, monkeypatch, behaviour, sample=sample, shard=Shard(k, 2)) for k, s in enumerate(shards)]
    # each shard did whole problems, none twice, every one once
    done = [set(s.problems) for s in summaries]
    assert not done[0] & done[1] and done[0] | done[1] == {p.key for p in demo_problems()}
    assert abs(len(done[0]) - len(done[1])) <= 1
    merged = copy(path, tmp_path / "merged.db")
    result = CliRunner().invoke(cli, ["--store", str(merged), "merge", *map(str, shards)])
    assert result.exit_code == 0, result.output
    got, want = state(Store(merged)), state(Store(whole))
    assert got["cells"] == want["cells"] and len(got["cells"]) > (400 if sample is None else 200)
    assert got["mutants"] == want["mutants"]  # the probe crasher quarantined, as in one run
    assert "quarantined" in {s for s, _ in got["mutants"].values()}
    assert got["checks"] == want["checks"]  # margins the shard added to the pool's own checks came too
    assert got["inputs"] == want["inputs"] and got["shares"] == want["shares"]


def test_merged_shards_keep_each_shards_run_and_say_which_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   pool: tuple[Path, dict[str, str]]) -> None:
    path, behaviour = pool
    shards = [copy(path, tmp_path / f"shard-{k}.db") for k in range(2)]
    for k, s in enumerate(shards):
        run(s, monkeypatch, behaviour, shard=Shard(k, 2))
    before = Store(path).db["runs"].count
    merged = copy(path, tmp_path / "merged.db")
    runner = CliRunner()
    outputs = [runner.invoke(cli, ["--store", str(merged), "merge", *map(str, shards)]).output for _ in range(2)]
    assert outputs[1].splitlines() == [f"{s}: nothing new" for s in shards]  # merging a shard twice adds nothing
    store = Store(merged)
    runs = {r["id"]: json.loads(r["environment"]).get("shard") for r in store.db["runs"].rows}
    assert len(runs) == before + 2 and sorted(filter(None, runs.values())) == ["0/2", "1/2"]
    # every cell names the run of the shard its problem is in (runs re-numbered, references followed)
    mine = {str(Shard(k, 2)): {p.key for p in Shard(k, 2).of(demo_problems())} for k in range(2)}
    problem_of = {r["id"]: r["problem"] for r in store.db["mutants"].rows}
    for c in store.db["cells"].rows:
        if runs[c["run"]] is not None:
            assert problem_of[c["mutant"]] in mine[runs[c["run"]]]
    listed = runner.invoke(cli, ["--store", str(merged), "runs", "--json"])
    assert sorted(filter(None, (r["shard"] for r in json.loads(listed.stdout)))) == ["0/2", "1/2"]
    table = runner.invoke(cli, ["--store", str(merged), "runs"])
    assert "evaluate 0/2" in table.output and "evaluate 1/2" in table.output


def test_a_shard_is_the_same_set_whatever_the_order_or_the_store() -> None:
    problems = demo_problems()
    for n in (1, 2, 3, 8, 9):
        parts = [Shard(k, n).of(problems) for k in range(n)]
        assert sorted(p.key for part in parts for p in part) == sorted(p.key for p in problems)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1  # dealt round-robin
        assert [Shard(k, n).of(list(reversed(problems))) for k in range(n)] == parts
    # the order a run takes problems in, so a shard stopped early has done a random subset too
    import hashlib

    order = sorted(problems, key=lambda p: hashlib.sha256(p.key.encode()).hexdigest())
    assert Shard(0, 1).of(problems) == order


@pytest.mark.parametrize("text, words", [
    ("3/3", "K counts from 0, so shard K of 3 is 0 to 2"),
    ("a/b", "--shard takes K/N"),
    ("0/0", "N is the number of shards, at least 1"),
    ("1", "--shard takes K/N"),
    ("-1/2", "--shard takes K/N"),
])
def test_a_bad_shard_is_one_line_and_a_usage_error(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(OptionError, match=words):
        Shard.parse(text)
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "run", "--shard", text, "demo/1"])
    assert result.exit_code == ExitCode.USAGE == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: --shard") and words in line
    assert not (tmp_path / "s.db").exists()  # refused before the store is opened


def test_kbm_run_passes_its_shard_to_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             pool: tuple[Path, dict[str, str]]) -> None:
    import kbm_toolkit.evaluation.device as device
    import kbm_toolkit.evaluation.fill as fill

    asked: list[RunOptions] = []

    def recorded(store: Store, problems: list, specs: Any, source: str, arch: str, env: dict,
                 options: RunOptions) -> Any:
        asked.append(options)
        return run_evaluation(store, problems, specs, source, arch, env,
                              RunOptions(**{**options.__dict__, "target": "fake_evaluator:cell_task",
                                            "rules": RULES, "deadline": lambda _: 1.5}))

    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    monkeypatch.setattr(device, "describe_device", lambda: {"cuda": True, "arch": "sm_90", "gpu": "fake"})
    monkeypatch.setattr(fill, "run_evaluation", recorded)
    store = copy(pool[0], tmp_path / "s.db")
    result = CliRunner().invoke(cli, ["--store", str(store), "run", "--inputs", "kernelbench", "--level", "demo",
                                      "--shard", "1/3", "--sample", "0.25"])
    assert result.exit_code == 0, result.output
    assert asked[0].shard == Shard(1, 3) and asked[0].gpus == 1 and asked[0].ray is None
    after = Store(store)
    ran = {c["mutant"] for c in after.db["cells"].rows_where("run = ?", [after.latest_run()])}
    done = {r["problem"] for r in after.db["mutants"].rows if r["id"] in ran}
    assert done and done <= {p.key for p in Shard(1, 3).of(demo_problems())}
    assert json.loads(after.run(after.latest_run())["environment"])["shard"] == "1/3"


def test_the_readme_slurm_recipe_names_the_commands_as_they_are() -> None:
    readme = (REPO / "README.md").read_text()
    recipe = readme[readme.index("## Beyond one machine"):]
    assert "#SBATCH --array=0-7" in recipe and "--shard $SLURM_ARRAY_TASK_ID/8" in recipe
    assert "kbm --store pool.db merge shard-*.db" in recipe and "--ray auto" in recipe
    result = CliRunner().invoke(cli, ["run", "--help"])
    assert "--shard K/N" in result.output and "--ray ADDRESS" in result.output
