"""`kbm verify`: submissions found and read, judged in real worker processes on the CPU (plain-torch
submissions of the demo problems: `--device cpu`), their cells stored, verdicts per protocol, exit
codes, and the corpus of kbm's own mutants exported as submissions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.analysis.submissions import NOT_CHECKED, submission_verdicts
from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.conformance.corpus import export_corpus, sample_file
from kbm_toolkit.evaluation.verify import VerifyOptions, protocol_specs, verify_submissions
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.submission import INDEX, SubmissionError, find_submissions, sample_problem
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.store import Store
from kbm_toolkit.vocabulary import Outcome, SubmissionStatus, Verdict

from support import SCREENING_RULES, REPO

KB, FUZZ = load_protocol("kernelbench"), load_protocol("fuzz")

HEADER = "import os, time\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n"
SUBMISSIONS = {
    # LeakyReLU (demo/1) as the reference computes it: every protocol accepts it
    "good.py": HEADER + "    def __init__(self, negative_slope=0.01):\n        super().__init__()\n"
                        "        self.slope = negative_slope\n\n"
                        "    def forward(self, x):\n        return torch.nn.functional.leaky_relu(x, self.slope)\n",
    # ReLU: right wherever x >= 0, which is every official input (torch.rand); wrong on fuzz's signs
    "relu.py": HEADER + "    def forward(self, x):\n        return torch.relu(x)\n",
    # right, but it zeroes its input afterwards: the next submission (relu.py) must get it whole again
    "inplace.py": HEADER + "    def forward(self, x):\n        y = torch.nn.functional.leaky_relu(x, 0.01)\n"
                           "        x.zero_()\n        return y\n",
    "shape.py": HEADER + "    def forward(self, x):\n        return x[..., :-1]\n",
    "raises.py": HEADER + "    def forward(self, x):\n        raise RuntimeError('boom')\n",
    "crash.py": HEADER + "    def forward(self, x):\n        os.abort()\n",
    "hang.py": HEADER + "    def forward(self, x):\n        time.sleep(120)\n        return x\n",
    # what an illegal address leaves behind: the worker's CUDA context is gone (its type's name says so)
    "poisons.py": "import torch\n\n\nclass AcceleratorError(RuntimeError):\n    pass\n\n\n"
                  "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                  "        raise AcceleratorError('CUDA error: an illegal memory access was encountered')\n",
    "load_raises.py": "import torch\nfrom torch import no_such_name\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n",
    "load_hangs.py": "import time\nimport torch\ntime.sleep(120)\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n",
    "syntax.py": "import torch\ndef f(:\n",
    "no_model_new.py": "import torch\n\n\nclass Model(torch.nn.Module):\n    pass\n",
}
MALFORMED = {"syntax.py": "line 2: syntax error", "no_model_new.py": "defines no ModelNew"}


def write(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(SUBMISSIONS[name])
    return folder


def cpu(**kw) -> VerifyOptions:
    return VerifyOptions(device="cpu", warm=None, run_timeout_s=kw.pop("run_timeout_s", 20.0),
                         load_timeout_s=kw.pop("load_timeout_s", 20.0), **kw)


# --- finding and reading submissions -------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("level_1_problem_19_sample_0_kernel.py", ("level1/19", 0)),
    ("level_2_problem_7_sample_12_kernel.py", ("level2/7", 12)),
    ("level_1_problem_19_sample_0.py", None),   # not KernelBench's name: the problem must be given
    ("my_relu.py", None),
])
def test_kernelbench_sample_names_say_their_problem(name: str, expected) -> None:
    assert sample_problem(Path(name)) == expected


def test_a_file_whose_problem_cannot_be_told_is_one_line(tmp_path: Path, demo: ProblemSet) -> None:
    write(tmp_path, ["good.py"])
    with pytest.raises(SubmissionError, match=r"good\.py: which problem does it solve\? Name it with --problem"):
        find_submissions([tmp_path / "good.py"], demo)
    with pytest.raises(SubmissionError, match="no submission here"):
        find_submissions([tmp_path], demo)  # a folder of other files, no problem named
    with pytest.raises(SubmissionError, match="no such file or folder"):
        find_submissions([tmp_path / "missing.py"], demo, "demo/1")


def test_a_kernelbench_name_of_a_problem_not_loaded_says_what_to_give(tmp_path: Path, demo: ProblemSet) -> None:
    path = tmp_path / "level_1_problem_19_sample_0_kernel.py"
    path.write_text(SUBMISSIONS["good.py"])
    with pytest.raises(SubmissionError, match="its name says problem level1/19, which is not loaded.*--kernelbench"):
        find_submissions([tmp_path], demo)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_file_says_why_in_one_line(tmp_path: Path, demo: ProblemSet, name: str) -> None:
    [found] = find_submissions([write(tmp_path, [name]) / name], demo, "demo/1")
    assert MALFORMED[name] in found.malformed and "\n" not in found.malformed
    assert found.row()["status"] == SubmissionStatus.MALFORMED


def test_the_same_text_twice_is_one_submission_and_an_edit_is_another(tmp_path: Path, demo: ProblemSet) -> None:
    write(tmp_path / "a", ["good.py"])
    write(tmp_path / "b", ["good.py"])
    found = find_submissions([tmp_path / "a", tmp_path / "b"], demo, "demo/1")
    assert len(found) == 1 and found[0].malformed is None
    (tmp_path / "b" / "good.py").write_text(SUBMISSIONS["good.py"] + "# edited\n")
    assert len(find_submissions([tmp_path / "a", tmp_path / "b"], demo, "demo/1")) == 2


# --- judging, in worker processes on the CPU -------------------------------------------------------

@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict, object]:
    """Every kind of submission to demo/1 LeakyReLU, judged once under kernelbench and fuzz."""
    folder = write(tmp_path_factory.mktemp("subs"), list(SUBMISSIONS))
    demo = ProblemSet.discover()
    store = Store(tmp_path_factory.mktemp("store") / "kbm.db")
    found = find_submissions([folder], demo, "demo/1")
    summary = verify_submissions(store, found, [KB, FUZZ], {"device": "cpu"},
                                 cpu(run_timeout_s=8.0, load_timeout_s=8.0))
    verdicts = {Path(v.submission["path"]).name: v for v in submission_verdicts(store, [KB, FUZZ])}
    return store, verdicts, summary


@pytest.mark.parametrize("name, kernelbench, fuzz", [
    ("good.py", Verdict.ACCEPTS, Verdict.ACCEPTS),
    ("relu.py", Verdict.ACCEPTS, Verdict.REJECTS),   # the official inputs are never negative
    ("inplace.py", Verdict.ACCEPTS, Verdict.ACCEPTS),
    ("shape.py", Verdict.REJECTS, Verdict.REJECTS),
    ("raises.py", Verdict.REJECTS, Verdict.REJECTS),
    ("crash.py", Verdict.REJECTS, Verdict.REJECTS),
    ("hang.py", Verdict.REJECTS, Verdict.REJECTS),
    ("poisons.py", Verdict.REJECTS, Verdict.REJECTS),
    ("load_raises.py", Verdict.REJECTS, Verdict.REJECTS),
    ("load_hangs.py", Verdict.REJECTS, Verdict.REJECTS),
    ("syntax.py", Verdict.REJECTS, Verdict.REJECTS),
    ("no_model_new.py", Verdict.REJECTS, Verdict.REJECTS),
])
def test_each_protocol_judges_each_submission(judged, name: str, kernelbench: Verdict, fuzz: Verdict) -> None:
    _, verdicts, summary = judged
    assert summary.problems == {"demo/1_LeakyReLU": "done"}
    assert (verdicts[name].verdict("kernelbench"), verdicts[name].verdict("fuzz")) == (kernelbench, fuzz)


def test_wrong_values_fail_only_the_inputs_that_show_them(judged) -> None:
    _, verdicts, _ = judged
    fuzz = next(p for p in verdicts["relu.py"].protocols if p.protocol == "fuzz")
    failed = {r.label for r in fuzz.failed}
    assert failed == {f"log-uniform fuzz {k}" for k in range(5)}  # signs appear only in the redraws
    assert all(r.outcome == Outcome.PASS and r.margin > 0.01 and r.words == "fail" for r in fuzz.failed)
    official = [r for r in fuzz.inputs if r.label.startswith("official")]
    assert len(official) == 5 and all(r.passed and r.margin == 0.0 for r in official)


def test_a_write_over_the_input_is_noted_and_the_input_built_again(judged) -> None:
    from kbm_toolkit.evaluation.submission_task import OVERWRITE_NOTE

    _, verdicts, _ = judged
    inputs = [r for p in verdicts["inplace.py"].protocols for r in p.inputs]
    assert inputs and all(r.passed and r.note == OVERWRITE_NOTE for r in inputs)
    assert all(r.note is None for p in verdicts["relu.py"].protocols for r in p.inputs)  # judged after it, on whole inputs


@pytest.mark.parametrize("name, outcome, note", [
    ("shape.py", Outcome.SHAPE, "output (16, 4095), expected (16, 4096)"),
    ("raises.py", Outcome.CRASH, "RuntimeError: boom"),
    ("crash.py", Outcome.CRASH, "worker died"),
    ("hang.py", Outcome.TIMEOUT, "no answer within 8 s"),
    ("poisons.py", Outcome.CRASH, "AcceleratorError: CUDA error: an illegal memory access was encountered"),
])
def test_a_failure_is_a_verdict_with_its_reason(judged, name: str, outcome: Outcome, note: str) -> None:
    _, verdicts, _ = judged
    first = verdicts[name].protocols[0].inputs[0]
    assert first.outcome == outcome and note in first.note and first.passed is False


def test_a_lost_worker_costs_one_restart_not_one_per_input(judged) -> None:
    store, verdicts, summary = judged
    for name in ("crash.py", "hang.py", "poisons.py"):
        runs = [r for p in verdicts[name].protocols for r in p.inputs if r.outcome is not None]
        assert {r.input for r in runs} == {verdicts[name].protocols[0].inputs[0].input}  # only official trial 0
    # crash, hang, a lost CUDA context, the file that hangs while loading: one worker each
    assert summary.restarts == 4


@pytest.mark.parametrize("name, status, note", [
    ("load_raises.py", SubmissionStatus.LOAD_ERROR, "loading it raised ImportError"),
    ("load_hangs.py", SubmissionStatus.LOAD_ERROR, "hung while loading: no answer within 8 s"),
    ("syntax.py", SubmissionStatus.MALFORMED, "syntax error"),
    ("good.py", SubmissionStatus.READY, None),
])
def test_what_loading_the_file_came_to_is_stored(judged, name: str, status: SubmissionStatus, note) -> None:
    _, verdicts, _ = judged
    row = verdicts[name].submission
    assert row["status"] == status
    assert (note in row["note"]) if note else row["note"] is None


def test_every_input_of_every_protocol_is_stored_once(judged) -> None:
    store, verdicts, _ = judged
    ids = {s.id for s in protocol_specs(ProblemSet.discover().get("demo/1"), [KB, FUZZ])}
    good = verdicts["good.py"].submission["id"]
    assert {i for (s, i) in store.submission_cells([good])} == ids and len(ids) == 10  # fuzz holds kernelbench's 5


def test_a_second_run_runs_nothing_and_again_runs_all(judged, tmp_path: Path) -> None:
    store, verdicts, _ = judged
    demo = ProblemSet.discover()
    path = Path(verdicts["good.py"].submission["path"])
    found = find_submissions([path], demo, "demo/1")
    assert verify_submissions(store, found, [KB, FUZZ], {"device": "cpu"}, cpu()).cells == 0
    again = verify_submissions(store, found, [KB, FUZZ], {"device": "cpu"}, cpu(again=True))
    assert again.cells == 10
    assert submission_verdicts(store, [KB], [found[0].id])[0].verdict("kernelbench") == Verdict.ACCEPTS


def test_a_protocol_that_excludes_the_problem_has_no_verdict(tmp_path: Path, judged) -> None:
    store, verdicts, _ = judged
    toml = tmp_path / "p.toml"
    toml.write_text('[protocol]\nname = "skips-demo1"\ntolerance = 0.01\nexclude = ["demo/1"]\n\n'
                    '[[inputs]]\ntrials = 1\n')
    [protocol] = load_protocols(toml)
    [v] = submission_verdicts(store, [protocol], [verdicts["good.py"].submission["id"]])
    assert v.verdict("skips-demo1") == NOT_CHECKED


def test_incomplete_until_every_input_has_a_result(tmp_path: Path, demo: ProblemSet) -> None:
    store = Store(tmp_path / "kbm.db")
    [s] = find_submissions([write(tmp_path / "s", ["good.py"]) / "good.py"], demo, "demo/1")
    store.record_problem(s.problem)
    store.record_submissions([s.row()])
    specs = KB.specs(s.problem)
    store.record_inputs(specs, "test")
    run = store.start_run("verify", {})
    store.record_submission_cells(run, [{"submission": s.id, "input": i.id, "outcome": "pass", "margin": 0.0,
                                         "max_abs": 0.0, "margins": {KB.judge.key: 0.0}} for i in specs[:4]])
    assert submission_verdicts(store, [KB])[0].verdict("kernelbench") == Verdict.INCOMPLETE
    store.record_submission_cells(run, [{"submission": s.id, "input": specs[4].id, "outcome": "value",
                                         "margin": 0.5, "max_abs": 1.0, "margins": {KB.judge.key: 0.5}}])
    assert submission_verdicts(store, [KB])[0].verdict("kernelbench") == Verdict.REJECTS


def test_merging_a_store_carries_its_submissions(judged, tmp_path: Path) -> None:
    store, verdicts, _ = judged
    other = Store(tmp_path / "other.db")
    added = other.merge(store)
    assert added["submissions"] == len(SUBMISSIONS) and added["submission_cells"] == store.db["submission_cells"].count
    assert {v.submission["id"]: v.verdict("fuzz") for v in submission_verdicts(other, [FUZZ])} == \
        {v.submission["id"]: v.verdict("fuzz") for v in verdicts.values()}


def _plans(*sizes: int) -> list:
    from types import SimpleNamespace

    from kbm_toolkit.evaluation.verify import _Plan

    specs = [SimpleNamespace(id=f"i{k}") for k in range(3)]
    return [_Plan(SimpleNamespace(key=f"p{n}"), specs, [SimpleNamespace(id=f"p{n}s{k}") for k in range(size)], set())
            for n, size in enumerate(sizes)]


@pytest.mark.parametrize("sizes, workers, expected", [
    ((12,), 4, [3, 3, 3, 3]),         # one problem's samples keep four workers busy
    ((12, 2), 2, [3, 3, 6, 2]),       # the biggest is halved until there are two shares per worker
    ((5,), 8, [5]),                   # too few to halve: each share would build the inputs for two
    ((7, 7), 1, [7, 7]),              # one worker: problems as they are
    ((40, 1, 1, 1, 1), 2, [40, 1, 1, 1, 1]),  # enough shares already
])
def test_problems_are_shared_out_among_workers(sizes, workers: int, expected: list[int]) -> None:
    from kbm_toolkit.evaluation.verify import share_out

    plans = _plans(*sizes)
    shares = share_out(plans, workers)
    assert [len(p.submissions) for p in shares] == expected
    # every submission is in exactly one share, in its problem's order
    assert [s.id for p in shares for s in p.submissions] == [s.id for p in plans for s in p.submissions]


def test_a_problem_shared_by_two_workers_is_judged_whole(tmp_path: Path, demo: ProblemSet) -> None:
    folder = tmp_path / "subs"
    folder.mkdir()
    for k in range(6):  # six texts, six submissions: two shares of three, one per worker
        (folder / f"good{k}.py").write_text(SUBMISSIONS["good.py"] + f"# sample {k}\n")
    (folder / "relu.py").write_text(SUBMISSIONS["relu.py"])
    store = Store(tmp_path / "kbm.db")
    found = find_submissions([folder], demo, "demo/1")
    ended: list[tuple[str, str]] = []
    summary = verify_submissions(store, found, [KB, FUZZ], {"device": "cpu"},
                                 cpu(workers=2, on_problem=lambda key, verdict: ended.append((key, verdict))))
    assert summary.problems == {"demo/1_LeakyReLU": "done"} and ended == [("demo/1_LeakyReLU", "done")]
    assert summary.cells == 7 * 10
    verdicts = {Path(v.submission["path"]).name: v.verdict("fuzz") for v in submission_verdicts(store, [FUZZ])}
    assert verdicts == {**{f"good{k}.py": Verdict.ACCEPTS for k in range(6)}, "relu.py": Verdict.REJECTS}
    # demo/1 has one set of shapes: each model is built for its first input and kept for the other nine
    built = store.db.execute("select count(build_ms), count(*) from submission_cells").fetchone()
    assert built == (7, 70)


# --- the command ---------------------------------------------------------------------------------

def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_cli_one_submission_prints_a_line_per_input_and_exits_0(tmp_path: Path) -> None:
    path = write(tmp_path / "s", ["good.py"]) / "good.py"
    result = invoke("--store", str(tmp_path / "k.db"), "verify", str(path), "--problem", "demo/1",
                    "--device", "cpu", "-a", "kernelbench")
    assert result.exit_code == ExitCode.OK, result.output
    lines = result.output.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(f"{path}  (demo/1_LeakyReLU, submission "))
    assert lines[first + 1] == "  kernelbench (allclose atol = rtol = 0.01, pytorch-default reference): accepts: 5 inputs pass"
    assert [line.split() for line in lines[first + 2:]] == [["official", "trial", str(k), "pass", "0.00e+00"]
                                                            for k in range(5)]


def test_cli_a_rejection_exits_9_and_a_malformed_file_3_with_one_line(tmp_path: Path) -> None:
    folder = write(tmp_path / "s", ["good.py", "relu.py"])
    store = str(tmp_path / "k.db")
    result = invoke("--store", store, "verify", str(folder), "--problem", "demo/1", "--device", "cpu",
                    "-a", "kernelbench", "-a", "fuzz")
    assert result.exit_code == ExitCode.REJECTED, result.output
    assert "fuzz: 1 accepts, 1 rejects" in result.output and "kernelbench: 2 accepts" in result.output
    write(folder, ["syntax.py"])
    result = invoke("--store", store, "verify", str(folder), "--problem", "demo/1", "--device", "cpu",
                    "-a", "kernelbench")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert [line for line in result.output.splitlines() if line.startswith("Error:")] == \
        [f"Error: {folder / 'syntax.py'}: malformed: line 2: syntax error: invalid syntax"]


def test_cli_json_and_the_listing_read_the_same_verdicts(tmp_path: Path) -> None:
    folder = write(tmp_path / "s", ["good.py", "relu.py"])
    store = str(tmp_path / "k.db")
    result = invoke("--store", store, "verify", str(folder), "--problem", "demo/1", "--device", "cpu",
                    "-a", "fuzz", "--json")
    data = json.loads(result.output)
    by_name = {Path(s["path"]).name: s for s in data["submissions"]}
    assert by_name["relu.py"]["protocols"]["fuzz"]["verdict"] == "rejects"
    assert [r["result"] for r in by_name["relu.py"]["protocols"]["fuzz"]["inputs"]] == ["pass"] * 5 + ["fail"] * 5
    listed = json.loads(invoke("--store", store, "submissions", "-a", "fuzz", "--json").output)
    assert {Path(s["path"]).name: s["protocols"]["fuzz"]["verdict"] for s in listed} == \
        {"good.py": "accepts", "relu.py": "rejects"}
    [run] = json.loads(invoke("--store", store, "runs", "--json").output)
    assert (run["kind"], run["cells"]) == ("verify", 20)  # two submissions on fuzz's ten inputs


def test_audit_and_the_tables_say_which_protocols_accept_the_submissions(tmp_path: Path) -> None:
    folder = write(tmp_path / "s", ["good.py", "relu.py", "shape.py"])
    store = str(tmp_path / "k.db")
    invoke("--store", store, "verify", str(folder), "--problem", "demo/1", "--device", "cpu", "-a", "fuzz",
           "-a", "kernelbench")
    audit = invoke("--store", store, "audit", "-a", "fuzz")
    assert "Submissions kbm verify judged: 3; fuzz accepts 1, rejects 2 (kbm submissions lists them)" in audit.output
    assert json.loads(invoke("--store", store, "audit", "-a", "kernelbench", "--json").output)["submissions"] == \
        {"accepts": 2, "rejects": 1}
    tables = invoke("--store", store, "report", "--tables", "-a", "kernelbench", "-a", "fuzz").output
    assert "| kernelbench | 2 | 1 | 0 | 0 |" in tables and "| fuzz | 1 | 2 | 0 | 0 |" in tables


def test_cli_without_a_gpu_exits_5(tmp_path: Path) -> None:
    path = write(tmp_path / "s", ["good.py"]) / "good.py"
    result = invoke("--store", str(tmp_path / "k.db"), "verify", str(path), "--problem", "demo/1")
    assert result.exit_code == ExitCode.NO_DEVICE
    assert "kbm verify runs submissions on a CUDA device and none is visible" in result.output


# --- kbm's mutants as a corpus of submissions ---------------------------------------------------------

@pytest.fixture
def mutated(tmp_path: Path, demo: ProblemSet) -> tuple[Store, list]:
    from kbm_toolkit.mutation.campaign import mutate_problems

    store = Store(tmp_path / "pool.db")
    problems = [demo.get("demo/1")]
    mutate_problems(store, problems, "sm_90", workers=1, require_gate=False, rules=SCREENING_RULES)
    return store, problems


def test_export_writes_a_control_then_the_drawn_mutants_and_verify_finds_them(mutated, tmp_path: Path,
                                                                              demo: ProblemSet) -> None:
    store, problems = mutated
    distinct = [r["id"] for r in store.mutants("demo/1_LeakyReLU", status="distinct")]
    corpus = export_corpus(store, problems, tmp_path / "corpus", per_problem=1)
    assert [e.mutant for e in corpus.written][0] is None and len(corpus.written) == 2
    assert corpus.written[1].mutant in distinct
    assert [e.file for e in corpus.written] == [sample_file(problems[0], 0), sample_file(problems[0], 1)]
    index = json.loads((tmp_path / "corpus" / INDEX).read_text())
    assert [e["mutant"] for e in index] == [e.mutant for e in corpus.written]
    found = find_submissions([tmp_path / "corpus"], demo)  # the index names the problem of each file
    assert sorted(s.path.name for s in found) == sorted(e.file for e in corpus.written)
    assert {s.problem.key for s in found} == {"demo/1_LeakyReLU"} and all(s.malformed is None for s in found)


def test_export_leaves_out_a_problem_whose_substrate_changed(mutated, tmp_path: Path) -> None:
    store, problems = mutated
    store.db.execute("update mutants set substrate_hash = 'old'")
    corpus = export_corpus(store, problems, tmp_path / "corpus")
    assert corpus.written == [] and "not the one its stored mutants were made from" in corpus.left_out["demo/1_LeakyReLU"]


def test_kernelbench_levels_get_kernelbench_names(demo: ProblemSet) -> None:
    from kbm_toolkit.problems.problem import Problem

    p = Problem("level2/7_X", "level2", 7, "X", REPO / "x.py", "kernelbench")
    assert sample_file(p, 3) == "level_2_problem_7_sample_3_kernel.py"
    assert sample_problem(Path(sample_file(p, 3))) == ("level2/7", 3)
    assert sample_file(demo.get("demo/1"), 0) == "demo__1_LeakyReLU__sample_0_kernel.py"


# --- on the GPU: kbm's own mutants, judged by kbm verify, against the shipped demo store -------------

@pytest.mark.gpu
def test_verify_on_the_gpu_agrees_with_the_shipped_demo_store(tmp_path: Path, demo: ProblemSet) -> None:
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.conformance.selection import select
    from kbm_toolkit.evaluation.device import describe_device
    from kbm_toolkit.store.shipped import open_shipped

    shipped = open_shipped("demo")
    problems = [demo.get("demo/1"), demo.get("demo/2"), demo.get("demo/3")]
    matrices = {mx.problem.key: mx for mx in load_matrices(shipped)}
    # the demo store holds strict-fp32 margins only; without a convolution, the TF32 reference kbm
    # verify computes for kernelbench is the strict one bit for bit
    selections = {p.name: select(shipped, matrices, p, problems, 6) for p in (KB, FUZZ)}
    wanted = {c.mutant for s in selections.values() for c in s.candidates if c.mutant}
    assert len(wanted) >= 12, {k: s.skipped for k, s in selections.items()}
    export_corpus(shipped, problems, tmp_path / "corpus", mutants=wanted)
    found = find_submissions([tmp_path / "corpus"], demo)
    store = Store(tmp_path / "verify.db")
    summary = verify_submissions(store, found, [KB, FUZZ], describe_device(), VerifyOptions(workers=2))
    assert set(summary.problems.values()) == {"done"}
    entries = json.loads((tmp_path / "corpus" / INDEX).read_text())
    index = {e["mutant"]: e["file"] for e in entries if e["mutant"]}
    verdicts = {Path(v.submission["path"]).name: v for v in submission_verdicts(store, [KB, FUZZ])}
    disagree = [(name, c.problem, c.mutant, c.detected) for name, s in selections.items() for c in s.candidates
                if c.mutant and (verdicts[index[c.mutant]].verdict(name) == Verdict.REJECTS) != c.detected]
    assert disagree == []
    controls = [e["file"] for e in entries if e["mutant"] is None]
    assert len(controls) == 3 and {verdicts[f].verdict(p.name) for f in controls for p in (KB, FUZZ)} == {Verdict.ACCEPTS}


def test_cli_judges_by_a_protocol_the_store_keeps(tmp_path: Path) -> None:
    # a suite or targets folder a run was given is kept in the store by name: verify finds it there
    from kbm_toolkit.store import Store

    path = write(tmp_path / "s", ["good.py"]) / "good.py"
    store = tmp_path / "k.db"
    text = "[protocol]\nname = \"two-trials\"\ndescription = \"two official trials\"\ntolerance = 1e-2\n\n" \
           "[[inputs]]\ntrials = 2\nlabel = \"official trial {index}\"\n"
    Store(store).record_protocol("two-trials", text, "two-trials/")
    result = invoke("--store", str(store), "verify", str(path), "--problem", "demo/1", "--device", "cpu",
                    "-a", "two-trials")
    assert result.exit_code == ExitCode.OK, result.output
    assert "  two-trials (allclose atol = rtol = 0.01" in result.output and "accepts: 2 inputs pass" in result.output


def test_cli_a_protocol_named_wrong_is_one_line_and_makes_no_store(tmp_path: Path) -> None:
    path = write(tmp_path / "s", ["good.py"]) / "good.py"
    store = tmp_path / "new" / "k.db"
    result = invoke("--store", str(store), "verify", str(path), "--problem", "demo/1", "--device", "cpu", "-a", "nope")
    assert result.exit_code == ExitCode.BAD_INPUT
    [error] = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert "no adapter, protocol or path 'nope'" in error
    assert not store.exists() and not store.parent.exists()
