"""Conformance with the real checkers: submissions, the checkers' import, the draw of mutants, the
worker pool, the results file and its summary (CPU), and a handful of mutants through KernelBench's
own eval (GPU)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.conformance.harness import (disagreement_table, execute, read_results, result_key, result_row,
                                             run_conformance, summarize, summary_table)
from kbm_toolkit.conformance.model_new import (SubmissionError, SubmissionRef, read_ref, reference_model, resolve,
                                               submission_ref, submission_source)
from kbm_toolkit.conformance.selection import Candidate, Selection, draw_key, select
from kbm_toolkit.conformance.workers import Pool, Task
from kbm_toolkit.errors import KbmError
from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.store import Store

from support import KB, KBV_CHECKOUT, KERNELBENCH, REPO


def _mutant_row(demo: ProblemSet, key: str = "demo/1"):
    problem = demo.get(key)
    substrate = substrate_for(problem)
    m = next(m for m in generate(substrate, load_rules()) if m.target == "kernel")
    row = {"id": m.id, "substrate_hash": m.substrate_hash, "name": m.name,
           "source_hash": hashlib.sha256(m.kernel_source.encode()).hexdigest()}
    return problem, substrate, m, row


# -- the submission ----------------------------------------------------------------------------------

def test_a_submission_is_a_modelnew_file_naming_its_mutant_and_hashes(demo: ProblemSet) -> None:
    problem, substrate, mutant, row = _mutant_row(demo)
    source = submission_source(submission_ref(problem, substrate, row))
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert "ModelNew" in classes and ast.unparse(classes["ModelNew"].bases[0]) == "torch.nn.Module"
    ref = read_ref(source)
    assert (ref.mutant, ref.substrate_hash, ref.source_hash) == (mutant.id, substrate.content_hash, row["source_hash"])
    assert ref.problem_path == str(problem.path) and ref.substrate == str(substrate.folder)
    assert mutant.name in source  # the display name, as a comment


def test_a_submission_re_derives_its_mutant_and_refuses_a_changed_one(demo: ProblemSet) -> None:
    problem, substrate, mutant, row = _mutant_row(demo)
    ref = submission_ref(problem, substrate, row)
    assert resolve(ref)[1:] == (mutant.kernel_source, None)
    assert reference_model(ref).__name__ == "Model"
    correct = submission_ref(problem, substrate)  # the control: the substrate itself
    assert correct.mutant is None and resolve(correct)[1] == substrate.source
    stale = SubmissionRef(**{**ref.__dict__, "substrate_hash": "0" * 64})
    with pytest.raises(SubmissionError, match="substrate has changed.*refusing to run mutant"):
        resolve(stale)
    with pytest.raises(SubmissionError, match="no longer make mutant"):
        resolve(SubmissionRef(**{**ref.__dict__, "mutant": "ffffffffffff"}))
    with pytest.raises(SubmissionError, match="source hash differs"):
        resolve(SubmissionRef(**{**ref.__dict__, "source_hash": "1" * 64}))


def test_modelnew_draws_the_reference_weights_as_kernelbench_seeds_it(demo: ProblemSet, monkeypatch) -> None:
    import torch

    from kbm_toolkit.conformance import model_new

    problem = demo.get("demo/7")  # a convolution: weights drawn in Model.__init__
    ref = submission_ref(problem, substrate_for(problem))
    # the kernel needs a GPU: stand the reference's own forward in for it, keep the rest
    monkeypatch.setattr(model_new, "bind", lambda r: (reference_model(r), lambda model, inputs: model(*inputs)))
    context: dict = {}
    exec(problem.source, context)  # as KernelBench's eval loads both files, into one namespace
    exec(submission_source(ref), context)
    init = context["get_init_inputs"]()
    torch.manual_seed(42)
    original = context["Model"](*init)
    torch.manual_seed(42)
    custom = context["ModelNew"](*init)
    assert all(torch.equal(a, b) for a, b in zip(original.state_dict().values(), custom.reference.state_dict().values()))
    x = context["get_inputs"]()
    assert torch.equal(original(*x), custom(*x))


# -- the checkers ------------------------------------------------------------------------------------

_IMPORT = """
import json, sys, torch
from kbm_toolkit.conformance import checkers
out = {}
if sys.argv[1] != "-":
    kb, stubbed = checkers.kernelbench_eval(sys.argv[1])
    out["kb"] = checkers.native_tolerance(kb)
    with checkers.patched_tolerance(kb, 1e-2) as used:
        out["patched"] = [used, kb.get_tolerance_for_precision(torch.float32), kb.get_tolerance_for_precision("fp16")]
    out["restored"] = kb.get_tolerance_for_precision(torch.float32)
    out["result"] = kb.KernelExecResult(compiled=True).metadata
if sys.argv[2] != "-":
    kbv, stubbed = checkers.kbv_eval(sys.argv[2])
    out["kbv"] = checkers.native_tolerance(kbv)
    out["hidden"] = callable(kbv.run_hidden_correctness_check)
print(json.dumps(out))
"""


def _import_checkers(kernelbench: Path | str, kbv: Path | str) -> dict:
    # in a child: the stand-ins for the checkers' LLM clients go into sys.modules
    out = subprocess.run([sys.executable, "-c", _IMPORT, str(kernelbench), str(kbv)], capture_output=True,
                         text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.kernelbench
def test_kernelbench_eval_imports_on_the_cpu_and_its_tolerance_can_be_set() -> None:
    got = _import_checkers(KERNELBENCH, "-")
    assert got["kb"] == 1e-4  # KernelBench main: fp32 at 1e-4 (kbm's kernelbench-head)
    assert got["patched"] == [[1e-2, "patched"], 1e-2, 1e-2] and got["restored"] == 1e-4
    assert got["result"] == {}


@pytest.mark.skipif(not (KBV_CHECKOUT / "hidden_tests").is_dir(), reason=f"needs a KernelBench-Verified checkout at {KBV_CHECKOUT}")
def test_kbv_eval_imports_on_the_cpu_at_its_own_tolerance() -> None:
    got = _import_checkers("-", KBV_CHECKOUT)
    assert got == {"kbv": 1e-3, "hidden": True}


# -- the draw ----------------------------------------------------------------------------------------

def _fabricated(path: Path, demo: ProblemSet, correct_margin: float = 1e-6) -> tuple[Store, object, dict[str, str]]:
    """demo/1 with mutants D0..D5 (decided: D0 killed on trial 0 only, the rest with five quiet
    cells), U (three cells of five: undecided) and T (a timeout cell)."""
    problem = demo.get("demo/1")
    sh = substrate_for(problem).content_hash
    store = Store(path)
    store.record_problem(problem)
    names = [f"D{i}" for i in range(6)] + ["U", "T"]
    for m in names:
        store.db["mutants"].insert({"id": m, "problem": problem.key, "substrate_hash": sh, "rule": "r", "family": "arithmetic",
                                    "status": "distinct", "name": f"mutant {m}", "source_hash": "s" + m})
    specs = KB.specs(problem)
    store.record_inputs(specs, "kernelbench")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for s in specs:
        store.record_input_check(sh, run, {"input": s.id, "valid": True, "outcome": "pass", "margin": correct_margin})
    cells = [{"mutant": "D0", "input": specs[0].id, "outcome": "pass", "margin": 0.5}]
    cells += [{"mutant": m, "input": s.id, "outcome": "pass", "margin": 1e-7} for m in names[1:6] for s in specs]
    cells += [{"mutant": "U", "input": s.id, "outcome": "pass", "margin": 1e-7} for s in specs[:3]]
    cells += [{"mutant": "T", "input": specs[0].id, "outcome": "timeout"}]
    store.record_cells(run, cells)
    return store, problem, {s.label: s.id for s in specs}


def test_the_draw_is_deterministic_and_leaves_out_timeouts_and_undecided(tmp_path: Path, demo: ProblemSet) -> None:
    store, problem, _ = _fabricated(tmp_path / "kbm.db", demo)
    matrices = {mx.problem.key: mx for mx in load_matrices(store)}
    first = select(store, matrices, KB, [problem], per_problem=4)
    again = select(store, matrices, KB, [problem], per_problem=4)
    assert [c.key for c in first.candidates] == [c.key for c in again.candidates]
    control, *mutants = first.candidates
    assert control.mutant is None and not control.detected
    ordered = sorted([f"D{i}" for i in range(6)], key=lambda m: draw_key(problem.key, m))
    assert [c.mutant for c in mutants] == ordered[:4]
    assert first.counts[problem.key] == {"scored": 8, "selectable": 6, "detected": 1, "timeout": 1,
                                         "undecided": 1, "chosen": 4}
    everything = select(store, matrices, KB, [problem], per_problem=10)
    by_id = {c.mutant: c for c in everything.candidates}
    assert set(by_id) == {None, *(f"D{i}" for i in range(6))}
    assert by_id["D0"].detected and not by_id["D1"].detected
    assert [c["kills"] for c in by_id["D0"].cells] == [True, False, False, False, False]
    assert by_id["D0"].source_hash == "sD0" and by_id["D0"].name == "mutant D0"
    assert select(store, matrices, KB, [problem], per_problem=4, salt="other").candidates != first.candidates


def test_a_problem_whose_correct_kernel_fails_a_protocol_input_is_left_out(tmp_path: Path, demo: ProblemSet) -> None:
    store, problem, _ = _fabricated(tmp_path / "kbm.db", demo, correct_margin=5e-2)  # over 1e-2 on every input
    matrices = {mx.problem.key: mx for mx in load_matrices(store)}
    selection = select(store, matrices, KB, [problem], per_problem=4)
    assert selection.candidates == [] and "correct kernel fails 5 of its inputs" in selection.skipped[problem.key]


# -- the worker pool ---------------------------------------------------------------------------------

POISONED = []


def fake_task(task: Task) -> dict:
    """A worker target for the pool tests (imported by name in the child)."""
    what = task.extra["do"]
    if what == "crash":
        os._exit(139)  # as a CUDA illegal-address abort ends a process
    if what == "hang":
        time.sleep(3600)
    if what == "raise":
        raise RuntimeError("no checkout")
    if what == "poison":
        POISONED.append(True)
    return {"correct": what == "pass", "pid": os.getpid()}


def fake_health() -> bool:
    return not POISONED


def test_the_pool_charges_a_crash_a_hang_and_a_lost_context_to_their_submission_only(tmp_path: Path) -> None:
    plan = ["pass", "crash", "hang", "poison", "raise", "fail", "pass"]
    tasks = [Task(i, "kernelbench", "", "", "", extra={"do": what}) for i, what in enumerate(plan)]
    pool = Pool(2, tmp_path / "logs", timeout=5, target="test_conformance:fake_task", health="test_conformance:fake_health")
    replies = {task.id: reply for task, reply in pool.run(tasks)}
    assert [replies[i]["status"] for i in range(len(plan))] == ["ok", "crash", "timeout", "ok", "error", "ok", "ok"]
    assert replies[4]["message"] == "RuntimeError: no checkout"
    assert [replies[i]["verdict"]["correct"] for i in (0, 5, 6)] == [True, False, True]
    assert pool.replaced == 3  # the crash, the hang and the poisoned context: each a fresh worker
    assert len(list((tmp_path / "logs").glob("worker-*.log"))) == 5
    assert list(pool.run(tasks, stop_at=time.monotonic())) == []  # a spent budget starts nothing


# -- the results file and its summary ----------------------------------------------------------------

def _task(n: int, problem: str, key: str, detected: bool, protocol: str = "kernelbench") -> Task:
    return Task(n, "kernelbench", "", "", "", extra={
        "protocol": protocol, "checker": "kernelbench", "problem": problem, "key": key,
        "mutant": None if key == "substrate" else key, "kind": "control" if key == "substrate" else "mutant",
        "name": f"{problem} {key}", "family": "", "kbm_detected": detected, "protocol_tolerance": 1e-2,
        "kbm_cells": [{"label": "official trial 0", "input": "i0", "outcome": "pass", "margin": 0.5 if detected else 1e-7,
                       "kills": detected, "correct_margin": 1e-7}]})


class FakePool:
    """Answers each task with the verdict its `answer` says, recording which tasks it was given."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers, self.given = answers, []

    def run(self, tasks, stop_at=None):
        for task in tasks:
            self.given.append(task.extra["key"])
            answer = self.answers[task.extra["key"]]
            if answer in ("timeout", "crash", "error"):
                yield task, {"status": answer, "message": answer, "seconds": 1.0}
            else:
                yield task, {"status": "ok", "seconds": 2.0, "verdict": {
                    "checker": "kernelbench", "compiled": True, "correct": answer, "tolerance": 1e-2,
                    "tolerance_source": "patched", "max_difference": [] if answer else [0.5], "error": ""}}


def test_a_run_resumes_from_its_results_file(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    tasks = [_task(0, "p1", "substrate", False), _task(1, "p1", "m1", True), _task(2, "p1", "m2", False)]
    first = FakePool({"substrate": True, "m1": False, "m2": "error"})
    execute(tasks, out, first, progress=None)
    with open(out, "a") as f:
        f.write('{"protocol": "kernelbench", "problem": "p1", "key": "m3"')  # a line cut off by a killed run
    second = FakePool({"m2": True})
    rows = execute(tasks, out, second, progress=None)
    assert first.given == ["substrate", "m1", "m2"] and second.given == ["m2"]  # the harness error is retried
    assert len(rows) == 3 and rows[("kernelbench", "p1", "m2")]["agree"] is True
    assert set(read_results(out)) == {result_key(t.extra) for t in tasks}


def test_the_summary_counts_agreement_over_mutants_with_a_verdict(tmp_path: Path) -> None:
    control = {"status": "ok", "verdict": {"correct": True, "tolerance": 1e-2, "tolerance_source": "patched"}}
    rows = [result_row(_task(0, "p1", "substrate", False), control)]
    cases = [("p1", "a", True, False), ("p1", "b", False, True), ("p2", "c", True, False), ("p2", "d", True, True),
             ("p2", "e", True, "timeout"), ("p3", "f", True, "crash"), ("p3", "g", True, "unloaded")]
    for n, (problem, key, detected, correct) in enumerate(cases, 1):
        reply = ({"status": correct, "message": correct} if correct in ("timeout", "crash") else
                 {"status": "ok", "verdict": {"correct": correct is True, "compiled": correct != "unloaded",
                                              "tolerance": 1e-2, "tolerance_source": "patched",
                                              "max_difference": [] if correct else [0.25], "error": "refused"}})
        rows.append(result_row(_task(n, problem, key, detected), reply))
    assert rows[-1]["status"] == "error" and rows[-1]["message"] == "the submission did not load: refused"
    [s] = summarize(rows)
    # a crashed eval rejects its submission; a timeout or a submission that did not load gives no
    # verdict; the control is apart
    assert (s.n, s.problems, s.agree, s.disagree, s.no_verdict) == (5, 3, 4, 1, 2)
    assert (s.controls, s.controls_passed, s.kbm_detected) == (1, 1, 4)
    assert s.agreement_pct == 80.0 and s.tolerances == "0.01 (patched)"
    table = summary_table([s])
    assert "80.0%" in table.splitlines()[2] and table.splitlines()[2].split()[:6] == ["kernelbench", "kernelbench", "5", "3", "4", "1"]
    text = disagreement_table(rows)
    assert "p2 d: kbm detected, kernelbench passes" in text and "t0=pass:0.5*" in text
    assert "p1 a" not in text


def test_the_parent_side_imports_neither_torch_nor_cuda() -> None:
    # the parent plans and writes results; only its workers touch the GPU
    code = ("import sys, kbm_toolkit.conformance.harness\n"
            "print(sorted(m for m in sys.modules if m in ('torch', 'cuda') or m.startswith('cuda.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- on the GPU: KernelBench's own eval --------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.kernelbench
def test_kernelbench_eval_agrees_with_the_shipped_store_on_ten_mutants(tmp_path: Path) -> None:
    from kbm_toolkit.store.shipped import open_shipped

    out = tmp_path / "conformance.jsonl"
    plan, rows = run_conformance(open_shipped("kernelbench"), out, KERNELBENCH, protocols=["kernelbench"],
                                 problems=["level1/12_Matmul_with_diagonal_matrices_"], per_problem=10, workers=2,
                                 progress=None)
    assert len(plan.tasks) == 11  # ten mutants and the correct substrate
    statuses = {r["status"] for r in rows.values()}
    assert statuses == {"ok"}, [r["message"] for r in rows.values()]
    assert [r["key"] for r in rows.values() if not r["agree"]] == [], disagreement_table(rows.values())
    assert {r["tolerance"] for r in rows.values()} == {1e-2}


def test_a_namespace_package_lacking_a_checkers_optional_module_gets_it_stubbed(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # on the H200's image `google` is a namespace package (protobuf's) without `genai`: `from google
    # import genai` raises ImportError, not ModuleNotFoundError
    from kbm_toolkit.conformance import checkers

    (tmp_path / "ns" / "google").mkdir(parents=True)
    (tmp_path / "chk" / "fakechecker").mkdir(parents=True)
    (tmp_path / "chk" / "fakechecker" / "__init__.py").write_text("")
    (tmp_path / "chk" / "fakechecker" / "eval.py").write_text("from google import genai\nLOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path / "ns"))
    for name in [m for m in sys.modules if m == "google" or m.startswith("google.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(checkers, "_STUBBED", [])
    monkeypatch.setattr(checkers, "_LOADED", {})
    try:
        module, stubbed = checkers._import(tmp_path / "chk", "fakechecker.eval", "fake")
        assert module.LOADED and "google.genai" in stubbed
    finally:
        for name in [m for m in sys.modules if m.startswith("fakechecker") or m.startswith("google")]:
            sys.modules.pop(name, None)


def test_without_a_gpu_the_script_says_so_once_before_starting(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible here")
    out = tmp_path / "results.jsonl"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "conformance.py"), "--kernelbench", str(tmp_path),
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        "Error: no CUDA device is visible: the checkers' evals run on a GPU (--summary reads a results file)"]
    assert not out.exists()


def _fake_kbv(root: Path, problem_text: str) -> Path:
    """A KernelBench-Verified checkout as far as a suite's run reads it: its copy of level1/1 and a hidden test."""
    (root / "KernelBench" / "level1").mkdir(parents=True)
    (root / "KernelBench" / "level1" / "1_Square.py").write_text(problem_text)
    (root / "hidden_tests" / "level1").mkdir(parents=True)
    (root / "hidden_tests" / "level1" / "1_hidden.py").write_text("# KBV's own\n")
    (root / "hidden_tests" / "level1" / "2_hidden.py").write_text("# KBV's own, not in the suite\n")
    (root / ".git").mkdir()
    return root


def test_a_suite_runs_in_a_copy_of_the_checkout_with_its_hidden_tests_laid_over(tmp_path: Path) -> None:
    from kbm_toolkit.conformance.harness import suite_checkout

    kbv = _fake_kbv(tmp_path / "kbv", "x = 1\n")
    suite = tmp_path / "suite"
    (suite / "hidden_tests" / "level1").mkdir(parents=True)
    (suite / "hidden_tests" / "level1" / "1_hidden.py").write_text("# kbm's suite\n")
    copy = suite_checkout(kbv, suite, tmp_path / "copy")
    assert (copy / "hidden_tests" / "level1" / "1_hidden.py").read_text() == "# kbm's suite\n"
    assert (copy / "hidden_tests" / "level1" / "2_hidden.py").read_text() == "# KBV's own, not in the suite\n"
    assert (kbv / "hidden_tests" / "level1" / "1_hidden.py").read_text() == "# KBV's own\n"  # the checkout untouched
    assert not (copy / ".git").exists()
    with pytest.raises(KbmError, match="no hidden_tests/ here: write the suite with kbm suite --format kbv"):
        suite_checkout(kbv, tmp_path / "not-a-suite", tmp_path / "copy2")


@pytest.mark.parametrize("copy_text, left_out", [
    ("# Copyright header\n\nx = 1\n", None),  # a licence header is not code
    ("x = 2\n", "KBV's copy of the problem differs in code from the file kbm measured"),
])
def test_a_suite_leaves_out_a_problem_whose_kbv_copy_differs_in_code(tmp_path: Path, copy_text: str,
                                                                      left_out: str | None) -> None:
    from kbm_toolkit.conformance.harness import _drop_without_hidden_tests
    from kbm_toolkit.problems.problem import Problem

    kbv = _fake_kbv(tmp_path / "kbv", copy_text)
    (tmp_path / "1_Square.py").write_text("x = 1\n")
    problem = Problem("level1/1_Square", "level1", 1, "Square", tmp_path / "1_Square.py", "kernelbench")
    selection = Selection("suite-2", 0.01, [Candidate(problem.key, "m1", "m1", "arithmetic", "h", "s", True)])
    _drop_without_hidden_tests(selection, [problem], kbv, same_code=True)
    assert selection.skipped.get(problem.key) == left_out
    assert len(selection.candidates) == (1 if left_out is None else 0)
