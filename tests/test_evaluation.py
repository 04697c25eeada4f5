"""The evaluation machinery with real worker processes that crash, hang and get killed (no GPU)."""

from __future__ import annotations

import json
import os
from collections import Counter
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

import kbm_toolkit.evaluation.run as evaluation_run
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.mutation.campaign import mutate_problems
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.store import Store

from support import REPO

RULES = [r for r in load_rules() if r.name in ("mul2div", "plus2minus", "minus2plus", "negate-store")]
FAKE = "fake_evaluator:cell_task"


def specs_for(problem) -> list[InputSpec]:
    return [InputSpec.make(problem.key, seed, label=f"trial {seed}") for seed in (1, 2, 3)]


def fast_deadline(_: float | None) -> float:
    return 1.5


def fake(**options: Any) -> RunOptions:
    """Run options for the fake worker: the test rules, the fast deadline, and `options`."""
    return RunOptions(target=FAKE, rules=RULES, deadline=fast_deadline, **options)


def faked(real: Callable[..., Any]) -> Callable[..., Any]:
    """`real` (`run_evaluation`) on the fake worker with the fast deadline, with its caller's other options."""
    def run(store: Store, problems: list, specs_for: Any, source: str, arch: str, env: dict,
            options: RunOptions | None = None) -> Any:
        return real(store, problems, specs_for, source, arch, env,
                    replace(options or RunOptions(), target=FAKE, deadline=fast_deadline))

    return run


def mutated_store(path: Path, keys: tuple[str, ...]) -> Store:
    """A store holding the screened mutants of `keys` under RULES, as `kbm mutate` leaves it."""
    store = Store(path)
    mutate_problems(store, [ProblemSet.discover().get(k) for k in keys], "sm_90", workers=1, require_gate=False,
                    rules=RULES)
    return store


def seeded_store(path: Path) -> tuple[Store, list[str]]:
    store = mutated_store(path, ("demo/3",))
    return store, [r["id"] for r in store.mutants("demo/3_LayerNorm", status="distinct")]


def evaluate(store: Store, monkeypatch: pytest.MonkeyPatch, behaviour: dict[str, str], **options: Any) -> Any:
    monkeypatch.setenv("KBM_FAKE", json.dumps(behaviour))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")
    return run_evaluation(store, [problem], specs_for, "test", "sm_90", {"gpu": "fake"}, fake(**options))


def cells(store: Store) -> dict[tuple[str, str], tuple]:
    return {(r["mutant"], r["input"]): (r["outcome"], r["margin"]) for r in store.db["cells"].rows}


def test_crashes_and_hangs_cost_a_restart_not_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    assert len(ids) >= 5
    probe_crasher, crasher, poisoner, hanger = ids[:4]
    summary = evaluate(store, monkeypatch, {probe_crasher: "probe-crash", crasher: "crash",
                                            poisoner: "poison", hanger: "hang"})
    got = cells(store)
    inputs = [s.id for s in specs_for(ProblemSet.discover().get("demo/3"))]
    # quarantined on the probe, never run on the real inputs
    assert summary.quarantined == [probe_crasher]
    assert summary.cells == store.db["cells"].count  # the cells flushed before a quarantine count too
    assert store.mutant(probe_crasher)["status"] == "quarantined"
    assert not [k for k in got if k[0] == probe_crasher and k[1] in inputs]
    # the crash on the probe input, and on the first real input, each cost one restart
    assert got[(crasher, inputs[0])][0] == "crash"
    assert got[(poisoner, inputs[0])][0] == "crash"
    assert got[(hanger, inputs[0])][0] == "timeout"
    # and, killed at every tolerance already, none of the three is run on the other inputs
    assert not [k for k in got if k[0] in (crasher, poisoner, hanger) and k[1] in inputs[1:]]
    # every other mutant got every input
    for m in ids[4:]:
        assert all((m, i) in got for i in inputs)
    assert summary.restarts >= 4
    assert summary.problems == {"demo/3_LayerNorm": "done"}


def test_a_worker_whose_context_breaks_before_any_cell_is_replaced(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    summary = evaluate(store, monkeypatch, {"broken": str(tmp_path / "broken")})
    assert (tmp_path / "broken").exists()
    assert summary.problems == {"demo/3_LayerNorm": "done"} and summary.restarts >= 1
    inputs = [s.id for s in specs_for(ProblemSet.discover().get("demo/3"))]
    assert {(m, i) for m in ids for i in inputs} <= set(cells(store))
    # no crashed cell says why this worker went: the run does, and keeps it with its split
    assert summary.replaced == [{"problem": "demo/3_LayerNorm", "input": "",
                                 "note": "AcceleratorError: CUDA error: unspecified launch failure"}]
    from kbm_toolkit.analysis.runs import time_split
    from kbm_toolkit.report.runs import replaced_lines

    split = time_split(store, store.latest_run())
    assert replaced_lines(split["replaced"]) == [
        "Workers replaced with no crashed or hung cell: 1",
        "  demo/3_LayerNorm: AcceleratorError: CUDA error: unspecified launch failure"]


def test_a_crashed_cell_is_its_own_reason_for_a_new_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    summary = evaluate(store, monkeypatch, {ids[0]: "poison", ids[1]: "crash"})
    assert summary.restarts >= 2 and summary.replaced == []


def test_the_real_task_hands_a_cuda_error_outside_a_launch_to_a_fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.evaluation.cell_task as cell_task_module
    from kbm_toolkit.vocabulary import RecordKind

    class AcceleratorError(RuntimeError):  # torch's name for a CUDA error; cuda_error() goes by it
        pass

    def broken(task: dict[str, Any]) -> None:
        raise AcceleratorError("CUDA error: unspecified launch failure")

    monkeypatch.setattr(cell_task_module, "_CellTask", broken)
    [record] = list(cell_task_module.cell_task({}))
    assert record["kind"] == RecordKind.POISONED and "unspecified launch failure" in record["note"]

    def wrong(task: dict[str, Any]) -> None:
        raise KeyError("problem")  # a bug, not the context: it still ends the task as an error

    monkeypatch.setattr(cell_task_module, "_CellTask", wrong)
    with pytest.raises(KeyError):
        list(cell_task_module.cell_task({}))


def test_the_probe_input_is_built_ahead_by_more_spares_than_the_others(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.evaluation.driver import PROBE_STANDBYS
    from kbm_toolkit.evaluation.workers import Worker

    briefed: list[tuple[str, int | None]] = []  # (the input, how many spares it goes to)
    monkeypatch.setattr(Worker, "prepare", lambda self, payload, standbys=None:
                        briefed.append((InputSpec.from_record(payload["spec"]).id, standbys)))
    store, _ = seeded_store(tmp_path / "s.db")
    evaluate(store, monkeypatch, {})
    probes = {r[0] for r in store.db.execute("select id from inputs where label = 'probe'")}
    probe = [n for spec, n in briefed if spec in probes]
    others = [n for spec, n in briefed if spec not in probes]
    assert PROBE_STANDBYS > 1 and probe and set(probe) == {PROBE_STANDBYS}
    assert others and set(others) == {None}  # the worker's own number


def test_a_tasks_wait_for_its_child_is_split_at_the_end_of_the_work_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.evaluation.cell_task as cell_task_module

    monkeypatch.setattr(cell_task_module, "_CellTask", lambda task: (_ for _ in ()).throw(KeyError("stop")))

    def waits(**times: float) -> dict[str, float]:
        records = cell_task_module.cell_task({"sent_at": time.time() - 1.0, **times})
        parts = {}
        with pytest.raises(KeyError):
            for r in records:
                parts[r["part"]] = r["s"]
        return parts

    now = time.time()
    split = waits(prepared_at=now - 0.25)  # the spare was still building the input for 0.75 s of it
    assert sorted(split) == ["building ahead", "handover"]
    assert 0.7 < split["building ahead"] < 0.8 and 0.2 < split["handover"] < 0.35
    assert sorted(waits(prepared_at=now - 5.0)) == ["handover"]  # done before the send: all pipe
    assert waits()["handover"] >= 1.0  # no work ahead at all


def test_a_spare_keeps_what_it_built_ahead_only_while_it_holds_little_of_the_gpu(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import kbm_toolkit.cuda.reference as reference
    import kbm_toolkit.evaluation.cell_task as cell_task_module

    problem = ProblemSet.discover().get("demo/3")
    held = {"bytes": 0}
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (100 * 2**30, 100 * 2**30))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: held["bytes"])
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(reference, "strict_fp32_references", lambda: None)
    monkeypatch.setattr(reference, "run_reference", lambda *a: ("model", ["x"], torch.ones(3), None))
    monkeypatch.setattr(cell_task_module.Built, "watched", classmethod(lambda cls, model, inputs, ref, others:
                                                                      SimpleNamespace(ref=ref)))
    monkeypatch.setattr(cell_task_module, "_PREPARED", {})
    kept = []
    for gib in (30, 10):  # a 30 GiB copy of 100 would crowd out the worker's next input; 10 would not
        held["bytes"] = gib * 2**30
        cell_task_module._PREPARED.clear()
        payload = {"problem": problem.record(), "margins": [], "spec": specs_for(problem)[0].record()}
        cell_task_module.prepare(payload)
        kept.append(len(cell_task_module._PREPARED))
    assert kept == [0, 1]


def test_a_reference_that_meets_a_broken_context_leaves_its_input_unjudged(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.cuda.reference as reference
    import kbm_toolkit.evaluation.cell_task as cell_task_module
    from kbm_toolkit.vocabulary import RecordKind

    class AcceleratorError(RuntimeError):
        pass

    def run_reference(problem: Any, spec: Any, models: Any) -> None:
        raise AcceleratorError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(reference, "run_reference", run_reference)
    task = cell_task_module._CellTask.__new__(cell_task_module._CellTask)  # no CUDA: only what _build reads
    task.problem, task.references, task.models, task.valid = ProblemSet.discover().get("demo/3"), [], {}, {}
    spec = specs_for(task.problem)[0]
    task.specs, task.mutants, task.done, task.checked, task.recheck, task.settled = [spec.record()], [], set(), set(), {}, None
    records = list(task.run())
    # the input is not called invalid (a reference that raises); a fresh worker builds it again
    assert [r["kind"] for r in records] == [RecordKind.POISONED] and records[0]["input"] == spec.id


def test_an_input_too_large_to_build_stays_unchecked_and_the_others_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import kbm_toolkit.cuda.reference as reference
    import kbm_toolkit.evaluation.cell_task as cell_task_module
    from kbm_toolkit.vocabulary import RecordKind

    task = cell_task_module._CellTask.__new__(cell_task_module._CellTask)  # no CUDA: only what _build reads
    task.problem, task.references, task.models, task.valid = ProblemSet.discover().get("demo/3"), [], {}, {}
    first, second = specs_for(task.problem)[:2]
    tries: dict[str, int] = {}

    def run_reference(problem: Any, spec: Any, models: Any) -> None:
        tries[spec.id] = tries.get(spec.id, 0) + 1
        if spec.id == first.id or tries[spec.id] == 1:  # the second input fits once the cache is freed
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.06 GiB")
        raise ValueError("not this input")

    monkeypatch.setattr(reference, "run_reference", run_reference)
    task.specs, task.mutants, task.done, task.checked, task.recheck, task.settled = \
        [first.record(), second.record()], [], set(), set(), {}, None
    records = [r for r in task.run() if r["kind"] != RecordKind.TIME]
    # the first is left unchecked (not called invalid) after two tries; the second is checked after its retry
    assert [(r["kind"], r["input"]) for r in records] == [(RecordKind.UNBUILT, first.id), (RecordKind.INPUT, second.id)]
    assert "out of GPU memory building input" in records[0]["note"] and not records[1]["valid"]
    assert tries == {first.id: 2, second.id: 2}


def test_a_run_keeps_the_cells_of_the_inputs_it_could_build_and_a_later_run_adds_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    problem = ProblemSet.discover().get("demo/3")
    trials = {s.label: s.id for s in specs_for(problem)}
    summary = evaluate(store, monkeypatch, {"unbuilt": [trials["trial 2"]]})
    verdict = summary.problems[problem.key]
    assert verdict.startswith("error: 1 of its inputs left unchecked, out of GPU memory building input")
    # its one worker had the GPU to itself: fewer workers would not help
    assert verdict.endswith("; run again on a GPU with more memory")
    on = Counter(i for _, i in cells(store))  # the probe's cells, and every mutant's on trials 1 and 3
    assert (on[trials["trial 1"]], on[trials["trial 2"]], on[trials["trial 3"]]) == (len(ids), 0, len(ids))
    assert trials["trial 2"] not in {r["input"] for r in store.db["input_checks"].rows}
    again = evaluate(store, monkeypatch, {})
    on = Counter(i for _, i in cells(store))
    assert again.problems[problem.key] == "done" and on[trials["trial 2"]] == len(ids)


def test_a_problem_planned_in_parts_is_the_problem_planned_whole(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from kbm_toolkit.evaluation.plan import Job, plan_parts, plans_ahead, stored_mutants

    assert plan_parts(5, 16) == [(0, None)] and plan_parts(40, None) == [(0, None)]
    assert plan_parts(40, 16) == [(0, 16), (16, 32), (32, None)] and plan_parts(32, 16) == [(0, 16), (16, None)]
    problems = [ProblemSet.discover().get(k) for k in ("demo/1", "demo/3")]
    store = mutated_store(tmp_path / "s.db", ("demo/1", "demo/3"))
    jobs = [Job(p, *stored_mutants(store, p), []) for p in problems]
    broken = Job(problems[0], jobs[0].substrate, jobs[0].substrate_hash, {f"m{i}": {} for i in range(3)}, [])
    args = ("sm_90", True, RULES, None)
    with ThreadPoolExecutor(3) as pool:
        whole = list(plans_ahead(pool, jobs, 4, args, size=None))
        parted = list(plans_ahead(pool, [jobs[0], broken, jobs[1]], 4, args, size=2))
    # a job whose parts raise comes once, with the error, and the jobs after it still come
    assert [j.problem.key for j, _ in parted] == ["demo/1_LeakyReLU", "demo/1_LeakyReLU", "demo/3_LayerNorm"]
    assert isinstance(parted[1][1], KeyError)
    for (_, plan), (_, in_parts) in zip(whole, [parted[0], parted[2]]):
        assert len(plan.mutants) > 2 and in_parts.mutants == plan.mutants  # the same images, in the same order
        assert (in_parts.original, in_parts.probe) == (plan.original, plan.probe)


class _Logged(evaluation_run.Worker):
    """A worker that logs, in one list shared by all, each task it is sent (its problem) and its close."""

    log: list[tuple[int, str]] = []

    def stream(self, task: Any, timeout: Any = None) -> Any:
        _Logged.log.append((id(self), task["problem"]["key"]))
        return super().stream(task, timeout)

    def close(self, wait_s: float = 5.0) -> None:
        _Logged.log.append((id(self), "closed"))
        super().close(wait_s)


def _crowded_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: dict[str, Any],
                 workers: int, **options: Any) -> tuple[Store, Any, list[tuple[str, str]]]:
    """demo/1 and demo/3 on `workers` workers of one GPU, `behaviour` for the fake, `options` for
    the run, in the store at tmp_path/s.db (made if new): the store, the summary, and each
    (problem, verdict) as the run said it."""
    problems = [ProblemSet.discover().get(k) for k in ("demo/1", "demo/3")]
    path = tmp_path / "s.db"
    store = Store(path) if path.exists() else mutated_store(path, ("demo/1", "demo/3"))
    monkeypatch.setenv("KBM_FAKE", json.dumps(behaviour))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    monkeypatch.setattr(evaluation_run, "Worker", _Logged)
    monkeypatch.setattr(_Logged, "log", [])
    said: list[tuple[str, str]] = []
    summary = run_evaluation(store, problems, specs_for, "test", "sm_90", {"gpu": "fake"},
                             fake(workers_per_gpu=workers, on_problem=lambda k, v: said.append((k, v)), **options))
    return store, summary, said


def test_an_input_that_did_not_fit_beside_another_worker_is_built_again_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = ProblemSet.discover().get("demo/3")
    trial = specs_for(problem)[1].id
    store, summary, said = _crowded_run(tmp_path, monkeypatch, {"crowded": {"inputs": [trial], "dir": str(tmp_path)}}, 2)
    assert summary.problems == {"demo/1_LeakyReLU": "done", problem.key: "done"}
    # it waited, and was finished after the other problem, by the worker left once the other closed
    assert said[-1] == (problem.key, "done") and ("demo/1_LeakyReLU", "done") in said[:-1]
    waited = [v for k, v in said if k == problem.key and v != "done"]
    assert waited == ["waiting: 1 of its inputs did not fit in GPU memory beside the other workers'; "
                      "tried again alone once they finish"]
    log = _Logged.log
    last = max(i for i, (_, what) in enumerate(log) if what == problem.key)
    other = next(w for w, _ in log if w != log[last][0])
    assert (other, "closed") in log[:last]
    # every mutant has its cell on every input and the probe, each once: the first try's are kept
    distinct = [r["id"] for r in store.mutants(problem.key) if r["status"] == "distinct"]
    on = Counter(i for m, i in cells(store) if m in distinct)
    assert on[trial] == len(distinct) and summary.cells == store.db["cells"].count
    assert trial in {r["input"] for r in store.db["input_checks"].rows}


def test_margins_owed_to_an_input_that_did_not_fit_come_when_it_is_built_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.judging import PYTORCH_DEFAULT, margin_key

    problem = ProblemSet.discover().get("demo/3")
    trial = specs_for(problem)[1].id
    store, _, _ = _crowded_run(tmp_path, monkeypatch, {}, 1, margins=[])
    assert store.db["input_checks"].count_where("margins is not null") == 0
    wanted = [(PYTORCH_DEFAULT, "output", 1.0)]
    _, summary, said = _crowded_run(tmp_path, monkeypatch, {"crowded": {"inputs": [trial], "dir": str(tmp_path)}}, 2,
                                    margins=wanted, checks_only=True)
    # the trial's recheck waited with it: one task beside the other worker, one alone, none in between
    assert summary.problems[problem.key] == "done"
    assert [v[:8] for k, v in said if k == problem.key] == ["waiting:", "done"]
    assert [what for _, what in _Logged.log].count(problem.key) == 2
    owed = {r["input"]: r["margins"] for r in store.db["input_checks"].rows_where("valid = 1")
            if r["input"] in {s.id for s in specs_for(problem)}}
    assert len(owed) == 3 and all(json.loads(m or "{}").keys() == {margin_key(*wanted[0])} for m in owed.values())


def test_an_input_that_does_not_fit_alone_either_waits_for_a_larger_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = ProblemSet.discover().get("demo/3")
    trial = specs_for(problem)[1].id
    _, summary, said = _crowded_run(tmp_path, monkeypatch, {"unbuilt": [trial]}, 2)
    verdict = summary.problems[problem.key]
    assert said[-1] == (problem.key, verdict) and [v[:8] for k, v in said if k == problem.key] == ["waiting:", "error: 1"]
    assert verdict.endswith("left unchecked, out of GPU memory building input " + trial +
                            "; run again on a GPU with more memory")


def test_a_run_measures_where_its_worker_time_went(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    summary = evaluate(store, monkeypatch, {ids[0]: "hang", ids[1]: "crash"})
    split = summary.seconds
    launched = store.db.execute("select count(*) from cells where ms is not null").fetchone()[0]
    assert split["launches"] == pytest.approx(launched * 1.0 / 1000, abs=0.01)
    assert split["loading"] == pytest.approx(launched * 0.5 / 1000, abs=0.01)
    assert split["comparing"] == pytest.approx(launched * 0.25 / 1000, abs=0.01)
    assert split["checking"] == pytest.approx(launched * 0.125 / 1000, abs=0.01)
    assert summary.compared_bytes == launched * 64
    # each input is checked once; a restarted worker builds it and runs its reference again, and
    # that counts apart, as rebuilding
    assert split["correct"] == pytest.approx(store.db["input_checks"].count / 1000)
    assert split["building"] == split["references"] == pytest.approx(split["correct"])
    assert split["rebuilding"] >= 2 * 2 / 1000  # a restart after the hang and one after the crash
    assert split["crashed"] >= 1.5  # the hang ran until its deadline
    assert split["planning"] > 0 and split["tail"] >= 0
    assert sum(v for k, v in split.items() if k != "wall") == pytest.approx(split["wall"], abs=0.05)
    stored = json.loads(store.db.execute("select stats from runs order by id desc").fetchone()[0])
    problems = stored.pop("problems")
    assert stored == {"seconds": split, "restarts": summary.restarts, "spares": summary.spares,
                      "compared_bytes": summary.compared_bytes, "replaced": []}  # a crash says why itself
    # the same split per problem: each part's time where it came from
    assert set(problems) == set(summary.problems)
    for part in ("launches", "comparing", "crashed", "building", "rebuilding", "planning"):
        assert sum(p.get(part, 0.0) for p in problems.values()) == pytest.approx(split[part], abs=0.01)
    assert sum(p.get("compared_bytes", 0) for p in problems.values()) == summary.compared_bytes
    # the first child and one per restart (the hang and the crash), each warm-up timed
    assert summary.spares["starts"] == 1 + summary.restarts and summary.spares["warm_s_median"] > 0


def test_a_run_stores_its_split_per_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = mutated_store(tmp_path / "s.db", ("demo/1", "demo/3"))
    hanger = next(iter(store.mutants("demo/3_LayerNorm", status="distinct")))["id"]
    monkeypatch.setenv("KBM_FAKE", json.dumps({hanger: "hang"}))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problems = [ProblemSet.discover().get(k) for k in ("demo/1", "demo/3")]
    run_evaluation(store, problems, specs_for, "test", "sm_90", {"gpu": "fake"}, fake())
    split = json.loads(store.db.execute("select stats from runs order by id desc").fetchone()[0])["problems"]
    assert set(split) == {"demo/1_LeakyReLU", "demo/3_LayerNorm"}
    for key, parts in split.items():  # the fake's launches take 1 ms each
        launched = store.db.execute("select count(*) from cells c join mutants m on m.id = c.mutant "
                                    "where m.problem = ? and c.ms is not null", [key]).fetchone()[0]
        assert parts["launches"] == pytest.approx(launched / 1000, abs=0.002)
        assert parts["compared_bytes"] == 64 * launched and parts["compares"] == launched
        assert parts["compare_gpu_s"] == pytest.approx(0.2 * launched / 1000, abs=0.002)
        assert parts["checked_bytes"] == 96 * launched
        assert parts["check_gpu_s"] == pytest.approx(0.1 * launched / 1000, abs=0.002)
    assert split["demo/3_LayerNorm"]["crashed"] >= 1.5 and "crashed" not in split["demo/1_LeakyReLU"]
    # the hang is one crashed cell; killed, it timed nothing itself, so there is no slowest error
    assert split["demo/3_LayerNorm"]["crashes"] == 1 and "crash_s_max" not in split["demo/3_LayerNorm"]
    assert "crashes" not in split["demo/1_LeakyReLU"]


def test_a_crash_the_worker_timed_is_charged_as_it_timed_it(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE_DELAY", "0.2")  # each cell takes 0.2 s: a crash charged from its start would show
    summary = evaluate(store, monkeypatch, {ids[0]: "poison"})
    crashes = store.db.execute("select count(*) from cells where mutant = ? and outcome = 'crash'",
                               [ids[0]]).fetchone()[0]
    assert crashes == 1
    # the fake says its crashed launch took 75 ms: that, not the 0.2 s since the launch began
    assert summary.seconds["crashed"] == pytest.approx(0.075)
    split = json.loads(store.db.execute("select stats from runs order by id desc").fetchone()[0])["problems"]
    assert split["demo/3_LayerNorm"]["crashes"] == 1
    assert split["demo/3_LayerNorm"]["crash_s_max"] == pytest.approx(0.075)


def test_witnesses_and_verdicts_are_queries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    evaluate(store, monkeypatch, {})
    verdicts = store.mutant_verdicts(tolerance=1e-2)
    for m in ids:
        witnesses = store.witnesses(m, tolerance=1e-2)
        assert verdicts[m] == ("witnessed" if witnesses else "unwitnessed")
        assert all(w["margin"] > 1e-2 for w in witnesses)
    assert "witnessed" in verdicts.values()
    assert all(not store.witnesses(m, tolerance=1.0) for m in ids)  # 0.5 passes at tolerance 1


def test_a_run_launches_nothing_kbm_equivalence_proved_and_scoring_misses_no_cell_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.analysis.matrix import load_matrices

    store, ids = seeded_store(tmp_path / "s.db")
    proven, other = ids[0], ids[1]
    official = InputSpec.make("demo/3_LayerNorm", 1).shape_key  # the three trials' shapes
    store.record_shape_verdicts([{"mutant": proven, "shape": official, "same": 1, "note": ""},
                                 {"mutant": other, "shape": official, "same": 0, "note": ""}], "sm_90", "13.0")
    evaluate(store, monkeypatch, {})
    (mx,) = load_matrices(store)
    inputs = {s.id for s in specs_for(mx.problem)}
    measured = set(cells(store))
    assert not {(proven, i) for i in inputs} & measured  # the probe, at another shape, still ran it
    assert {(m, i) for m in set(ids) - {proven} for i in inputs} <= measured
    assert all(mx.proven.get(i) == {proven} and not mx.missing(i, set()) for i in inputs)
    evaluate(store, monkeypatch, {})  # nothing left to measure: a second run adds no cell
    assert set(cells(store)) == measured


RUNNER = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from typing import Any
from kbm_toolkit.store import Store
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.input_spec import InputSpec
# the test module's own specs_for, RULES and fake(), restated: a script does not import a test module
rules = [r for r in load_rules() if r.name in ("mul2div", "plus2minus", "minus2plus", "negate-store")]
store = Store({db!r})
try:
    run_evaluation(store, [ProblemSet.discover().get("demo/3")],
                   lambda p: [InputSpec.make(p.key, seed, label=f"trial {{seed}}") for seed in (1, 2, 3)],
                   "test", "sm_90", {{}},
                   RunOptions(target="fake_evaluator:cell_task", rules=rules, deadline=lambda _: 1.5))
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_a_run_killed_halfway_resumes_to_the_same_matrix(tmp_path: Path) -> None:
    whole, _ = seeded_store(tmp_path / "whole.db")
    whole.close()
    part, ids = seeded_store(tmp_path / "part.db")
    total = len(ids) * 4  # three inputs and the probe
    part.close()
    env = {**os.environ, "KBM_FAKE": "{}", "PYTHONPATH": str(REPO / "tests")}
    subprocess.run([sys.executable, "-c", RUNNER.format(tests=str(REPO / "tests"), db=str(tmp_path / "whole.db"))],
                   env=env, check=True, timeout=300)
    slow = {**env, "KBM_FAKE_DELAY": "0.05"}
    proc = subprocess.Popen([sys.executable, "-c", RUNNER.format(tests=str(REPO / "tests"), db=str(tmp_path / "part.db"))],
                            env=slow, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.3)
        n = Store(tmp_path / "part.db").db["cells"].count
        if n >= total // 3:
            break
    os.killpg(proc.pid, signal.SIGKILL)  # the parent and its worker, at once, mid-run
    proc.wait()
    halfway = Store(tmp_path / "part.db").db["cells"].count
    assert 0 < halfway < total
    subprocess.run([sys.executable, "-c", RUNNER.format(tests=str(REPO / "tests"), db=str(tmp_path / "part.db"))],
                   env=env, check=True, timeout=300)
    resumed, reference = cells(Store(tmp_path / "part.db")), cells(Store(tmp_path / "whole.db"))
    assert resumed == reference and len(resumed) == total


def test_a_burst_of_interrupts_stops_a_run_once_and_cleanly(tmp_path: Path) -> None:
    _, ids = seeded_store(tmp_path / "s.db")
    runner = RUNNER.format(tests=str(REPO / "tests"), db=str(tmp_path / "s.db"))
    env = {**os.environ, "KBM_FAKE": "{}", "KBM_FAKE_DELAY": "0.05", "PYTHONPATH": str(REPO / "tests")}
    proc = subprocess.Popen([sys.executable, "-c", runner], env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while Store(tmp_path / "s.db").db["cells"].count < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    for _ in range(5):  # Ctrl-C pressed again and again, or `timeout -s INT`: to the whole process group
        os.killpg(proc.pid, signal.SIGINT)  # (workers, spares, compile pool), all before the run's next check
        time.sleep(0.001)
    sent = time.monotonic()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr  # a KeyboardInterrupt out of the run, from where it checks
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr  # no child's either
    assert time.monotonic() - sent < 20
    store = Store(tmp_path / "s.db")
    run = store.db["runs"].get(1)
    assert run["stopped"] and run["finished"] is None  # the clean-up ran to its end, not cut short
    assert 5 <= store.db["cells"].count < len(ids) * 4
    subprocess.run([sys.executable, "-c", runner], env={**env, "KBM_FAKE_DELAY": "0"}, check=True, timeout=300)
    assert Store(tmp_path / "s.db").db["cells"].count == len(ids) * 4  # and the same call resumes it


def test_a_stop_that_overruns_prints_where_each_thread_is(tmp_path: Path) -> None:
    seeded_store(tmp_path / "s.db")
    runner = RUNNER.format(tests=str(REPO / "tests"), db=str(tmp_path / "s.db")).replace("store = Store(", """
import time
import kbm_toolkit.evaluation.run as er
from kbm_toolkit.evaluation.workers import Worker
er.STOP_DUMP_S = 0.5
real_close = Worker.close
def slow_close(self, *a):  # a clean-up that takes longer than it should
    time.sleep(2)
    real_close(self, *a)
Worker.close = slow_close
store = Store(""")
    env = {**os.environ, "KBM_FAKE": "{}", "KBM_FAKE_DELAY": "0.05", "PYTHONPATH": str(REPO / "tests")}
    proc = subprocess.Popen([sys.executable, "-c", runner], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while Store(tmp_path / "s.db").db["cells"].count < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr  # it still stops, and says where it spent the time
    assert "Timeout (0:00:00.500000)!" in stderr and "in slow_close" in stderr, stderr


def test_a_resumed_or_wider_run_compiles_only_the_mutants_it_has_work_for(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.store import in_sample
    from kbm_toolkit.protocols.protocol import Protocol

    a = Protocol("a", "", 1e-2, ({"trials": 3},))
    problems = [ProblemSet.discover().get(k) for k in ("demo/1", "demo/3")]
    store = mutated_store(tmp_path / "s.db", ("demo/1", "demo/3"))
    distinct = {r["id"] for p in problems for r in store.mutants(p.key, status="distinct")}
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    compiled: dict[str, set[str]] = {}  # problem -> the mutants sent to the compile pool
    real_pool = evaluation_run.compile_pool

    def counting_pool(size: int) -> Any:
        pool = real_pool(size)
        submit = pool.submit
        pool.submit = lambda fn, problem, s, h, rows, *rest, **kw: (compiled.__setitem__(problem.key, set(rows))
                                                                    or submit(fn, problem, s, h, rows, *rest, **kw))
        return pool

    monkeypatch.setattr(evaluation_run, "compile_pool", counting_pool)

    def run(share: float | None, first_kill: list[Any] | None = None) -> Any:
        compiled.clear()
        return run_evaluation(store, problems, a.specs, "a", "sm_90", {"gpu": "fake"},
                              fake(sample=share, first_kill=first_kill))

    half = {m for m in distinct if in_sample(m, 0.5)}
    assert 0 < len(half) < len(distinct)
    for share, first_kill, added in ((0.5, None, half), (None, [a], distinct - half)):
        run(share, first_kill)
        assert set(compiled) == {p.key for p in problems} and set().union(*compiled.values()) == added
        cells_before, shares = store.db["cells"].count, (store.samples(), store.full_rows())
        again = run(share, first_kill)  # resumed with nothing left: nothing compiled, each still reported done
        assert compiled == {} and again.problems == {p.key: "done" for p in problems}
        assert store.db["cells"].count == cells_before and (store.samples(), store.full_rows()) == shares
    skipped = {m for m in distinct - half if store.db.execute("select count(*) from cells where mutant = ?",
                                                                [m]).fetchone()[0] < 4}  # three inputs, the probe
    run(None)  # full rows for the mutants first kill skipped, and only for those
    assert skipped and set().union(*compiled.values()) == skipped and store.full_rows() == {}


def test_audit_on_a_gpu_machine_fills_the_cells_it_lacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import kbm_toolkit.evaluation.device as device
    import kbm_toolkit.evaluation.fill as fill
    from kbm_toolkit.cli import cli

    store, ids = seeded_store(tmp_path / "s.db")
    store.close()
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    monkeypatch.setattr(device, "describe_device", lambda: {"cuda": True, "arch": "sm_90", "gpu": "fake GPU"})
    monkeypatch.setattr(fill, "run_evaluation", faked(evaluation_run.run_evaluation))
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "-a", "kernelbench",
                                                 "--denominator", "kernelbench", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert not report["missing"]["cells"] and report["witnessed"] > 0
    assert "fake GPU" in report["provenance"]
    assert Store(tmp_path / "s.db").db["cells"].count == len(ids) * 6  # the probe and five official trials


@pytest.mark.parametrize("args, spares", [(["--spares", "1"], 1), ([], 6), (["--workers", "2"], 3),
                                          (["--workers", "4"], 2), (["--spares", "0"], 0)])
def test_kbm_run_keeps_the_spares_it_is_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  args: list[str], spares: int) -> None:
    from click.testing import CliRunner

    import kbm_toolkit.evaluation.device as device
    import kbm_toolkit.evaluation.fill as fill
    from kbm_toolkit.cli import cli

    seeded_store(tmp_path / "s.db")[0].close()
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    monkeypatch.setattr(device, "describe_device", lambda: {"cuda": True, "arch": "sm_90", "gpu": "fake GPU"})
    monkeypatch.setattr(fill, "run_evaluation", faked(evaluation_run.run_evaluation))
    kept = []

    class Counted(evaluation_run.Worker):
        def __init__(self, *a: Any, **k: Any) -> None:
            kept.append(k["spares"])
            super().__init__(*a, **k)

    monkeypatch.setattr(evaluation_run, "Worker", Counted)
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "run", "--inputs", "kernelbench", *args])
    assert result.exit_code == 0, result.output
    assert kept and set(kept) == {spares}
    env = json.loads(Store(tmp_path / "s.db").db.execute("select environment from runs order by id desc").fetchone()[0])
    assert env["spares_per_worker"] == spares


def test_two_workers_share_the_problems_and_fill_the_same_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problems = [ProblemSet.discover().get(k) for k in ("demo/1", "demo/3")]
    store = mutated_store(tmp_path / "s.db", ("demo/1", "demo/3"))
    crasher = next(r["id"] for r in store.mutants("demo/1_LeakyReLU") if r["status"] == "distinct")
    monkeypatch.setenv("KBM_FAKE", json.dumps({crasher: "crash"}))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    summary = run_evaluation(store, problems, specs_for, "test", "sm_90", {"gpu": "fake"}, fake(workers_per_gpu=2))
    assert summary.problems == {p.key: "done" for p in problems}
    distinct = [r["id"] for p in problems for r in store.mutants(p.key) if r["status"] == "distinct"]
    # the probe and three inputs, each once; the crasher stops at its first real input
    assert store.db["cells"].count == len(distinct) * 4 - 2
    assert cells(store)[(crasher, specs_for(problems[0])[0].id)][0] == "crash"


def test_a_sampled_run_evaluates_its_share_and_widens_without_redoing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.store import in_sample
    from kbm_toolkit.analysis.matrix import load_matrices

    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")

    def run(share: float | None) -> None:
        run_evaluation(store, [problem], specs_for, "test", "sm_90", {"gpu": "fake"}, fake(sample=share))

    half = {m for m in ids if in_sample(m, 0.5)}
    assert 0 < len(half) < len(ids)  # the draw splits this pool, so the test can tell
    run(0.5)
    assert {r["mutant"] for r in store.db["cells"].rows} == half
    assert store.samples() == {problem.key: 0.5}
    assert set(load_matrices(store)[0].mutants) == half  # scores are over the sample
    run(0.25)  # never narrows what was evaluated
    assert store.samples() == {problem.key: 0.5}
    first = {(r["mutant"], r["input"]): r["run"] for r in store.db["cells"].rows}
    run(None)
    assert store.samples() == {}
    assert {r["mutant"] for r in store.db["cells"].rows} == set(ids)
    after = {(r["mutant"], r["input"]): r["run"] for r in store.db["cells"].rows}
    assert all(after[k] == v for k, v in first.items())  # the sampled cells were kept, not redone


def test_merging_two_samples_keeps_the_wider() -> None:
    a, b = Store(":memory:"), Store(":memory:")
    problem = ProblemSet.discover().get("demo/3")
    for store, share in ((a, 0.2), (b, 0.6)):
        store.record_problem(problem)
        store.widen_sample(problem.key, share)
    a.merge(b)
    assert a.samples() == {problem.key: 0.6}


def test_filling_cells_uses_each_problems_whole_share_or_the_widest() -> None:
    store = Store(":memory:")
    keys = {n: ProblemSet.discover().get(n).key for n in ("demo/1", "demo/3", "demo/4", "demo/5")}
    for name, share in (("demo/1", 0.3), ("demo/3", 0.0), ("demo/4", 0.5)):  # demo/3: a first run stopped
        store.record_problem(ProblemSet.discover().get(name))
        store.widen_sample(keys[name], share)
    assert store.fill_shares(list(keys.values())) == {keys["demo/1"]: 0.3, keys["demo/3"]: 0.5,
                                                       keys["demo/4"]: 0.5, keys["demo/5"]: 0.5}


def test_rerun_crashers_runs_a_crashed_mutant_on_every_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    poisoner = ids[0]
    evaluate(store, monkeypatch, {poisoner: "poison"})
    inputs = [s.id for s in specs_for(ProblemSet.discover().get("demo/3"))]
    assert [k for k in cells(store) if k[0] == poisoner and k[1] in inputs] == [(poisoner, inputs[0])]
    evaluate(store, monkeypatch, {poisoner: "poison"})  # a resumed run keeps it stopped
    assert sum(1 for k in cells(store) if k[0] == poisoner and k[1] in inputs) == 1
    run_evaluation(store, [ProblemSet.discover().get("demo/3")], specs_for, "test", "sm_90", {"gpu": "fake"},
                   fake(rerun_crashers=True))
    assert all(cells(store)[(poisoner, i)][0] == "crash" for i in inputs)


def test_a_crash_stops_a_mutant_only_for_runs_that_include_its_input(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # e.g. a crash on a kbv-only input: fuzz has not seen it, so `kbm audit -a fuzz` must be able to fill fuzz's cells
    store, ids = seeded_store(tmp_path / "s.db")
    poisoner = ids[0]
    evaluate(store, monkeypatch, {poisoner: "poison"})
    problem = ProblemSet.discover().get("demo/3")
    others = [InputSpec.make(problem.key, seed, label=f"other {seed}") for seed in (7, 8)]
    run_evaluation(store, [problem], lambda p: others, "other", "sm_90", {"gpu": "fake"}, fake())
    assert cells(store)[(poisoner, others[0].id)][0] == "crash"  # it ran, and crashed again
    assert (poisoner, others[1].id) not in cells(store)  # then stopped within this run


def test_checks_only_runs_every_input_check_and_no_mutant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "s.db")  # no mutants at all: a ceiling search needs none
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problems = [ProblemSet.discover().get(k) for k in ("demo/1", "demo/3")]
    summary = run_evaluation(store, problems, specs_for, "ceiling", "sm_90", {"gpu": "fake"},
                             fake(checks_only=True, workers_per_gpu=2))
    assert summary.problems == {p.key: "done" for p in problems}
    assert store.db["cells"].count == 0
    checked = {r["input"] for r in store.db["input_checks"].rows}
    assert checked == {s.id for p in problems for s in specs_for(p)}
    assert store.samples() == {} and {r["kind"] for r in store.db["runs"].rows} == {"check"}


def test_only_runs_the_mutants_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")
    run_evaluation(store, [problem], specs_for, "test", "sm_90", {"gpu": "fake"},
                   fake(only={problem.key: set(ids[:2])}))
    assert {r["mutant"] for r in store.db["cells"].rows} == set(ids[:2])


def test_a_run_on_chosen_mutants_widens_no_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `--survivors-of P --sample 0.5` on a store evaluated at 25%: the survivors are all within the
    # 25%, and the other mutants of the 50% have none of P's cells, so the store stays at 25%
    from kbm_toolkit.store import in_sample

    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")
    run_evaluation(store, [problem], specs_for, "test", "sm_90", {"gpu": "fake"}, fake(sample=0.25))
    quarter = sorted(m for m in ids if in_sample(m, 0.25))
    assert quarter and store.samples() == {problem.key: 0.25}
    run_evaluation(store, [problem], specs_for, "test", "sm_90", {"gpu": "fake"},
                   fake(sample=0.5, only={problem.key: set(quarter[:1])}))
    assert store.samples() == {problem.key: 0.25}


def test_targets_on_a_gpu_machine_measure_every_ceiling_in_one_run(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import kbm_toolkit.evaluation.device as device
    import kbm_toolkit.evaluation.target_checks as target_checks
    from kbm_toolkit.cli import cli

    # every probe passes (the ceiling is the largest scale probed); the correct kernel fails on NaN inputs
    monkeypatch.setenv("KBM_FAKE", '{"invalid": ["nan_element"]}')
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    monkeypatch.setattr(device, "describe_device", lambda: {"cuda": True, "arch": "sm_90", "gpu": "fake GPU", "gpus": 1})
    calls = []
    real = faked(evaluation_run.run_evaluation)

    def fake_run(*a, **k):
        calls.append(sorted(p.key for p in a[1]))
        return real(*a, **k)

    monkeypatch.setattr(target_checks, "run_evaluation", fake_run)
    args = ["--store", str(tmp_path / "s.db"), "targets", "demo/1", "demo/3", "--emit", str(tmp_path / "t")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    # one run for both ceilings, one for both problems' targeted inputs
    assert calls == [["demo/1_LeakyReLU", "demo/3_LayerNorm"]] * 2
    assert "ceiling sign-mixed x10000, same-sign x10000" in result.output
    emitted = load_protocols(tmp_path / "t")[0]
    labels = [s.label for k in ("demo/1", "demo/3") for s in emitted.specs(ProblemSet.discover().get(k))]
    assert labels and not any("NaN" in x for x in labels)  # the gate left them out, and says so
    assert "left out 'target NaN in the last element'" in result.output and "2 left out as invalid" in result.output
    assert CliRunner().invoke(cli, args).exit_code == 0 and len(calls) == 2  # measured once, stored


def test_an_interrupted_run_keeps_its_cells_and_records_when_it_stopped(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.setenv("KBM_FAKE_DELAY", "0.02")
    monkeypatch.syspath_prepend(str(REPO / "tests"))

    def interrupt(done: int, total: int) -> None:
        if done >= 4:
            raise KeyboardInterrupt  # what Ctrl-C or `timeout -s INT` raises in the parent

    with pytest.raises(KeyboardInterrupt):
        run_evaluation(store, [ProblemSet.discover().get("demo/3")], specs_for, "test", "sm_90", {"gpu": "fake"},
                       fake(on_progress=interrupt))
    run = store.db["runs"].get(1)
    assert run["finished"] is None and run["stopped"] >= run["started"]
    assert 4 <= store.db["cells"].count < len(ids) * 4


def test_an_interrupted_wider_run_leaves_the_share_it_had_finished(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.analysis.matrix import load_matrices

    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")

    def run(share: float | None, **kw: Any) -> None:
        run_evaluation(store, [problem], specs_for, "test", "sm_90", {"gpu": "fake"}, fake(sample=share, **kw))

    run(0.5)
    half = store.db["cells"].count
    monkeypatch.setenv("KBM_FAKE_DELAY", "0.02")

    def interrupt(done: int, total: int) -> None:
        if done >= half + 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(None, on_progress=interrupt)
    assert half < store.db["cells"].count < len(ids) * 4  # some of the wider share's cells are stored
    assert store.samples() == {problem.key: 0.5}  # but scores stay on the share that is whole
    assert len(load_matrices(store)[0].mutants) < len(ids)
    monkeypatch.delenv("KBM_FAKE_DELAY")
    run(None)  # resuming finishes the problem, and only then widens its share
    assert store.samples() == {} and store.db["cells"].count == len(ids) * 4


def test_first_kill_runs_fewer_cells_and_every_audit_of_its_protocols_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol

    # `a` and `b` share the first official trial; b's tolerance is stricter, as kbv's is
    a = Protocol("a", "", 1e-2, ({"trials": 3},))
    b = Protocol("b", "", 1e-3, ({"seed_index": 0}, {"trials": 2, "seed_offset": 3}))

    def union(problem) -> list[InputSpec]:
        return list({s.id: s for p in (a, b) for s in p.specs(problem)}.values())

    problem = ProblemSet.discover().get("demo/3")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    stores = {}
    for name, rule in (("full", None), ("first", [a, b])):
        stores[name], ids = seeded_store(tmp_path / f"{name}.db")
        run_evaluation(stores[name], [problem], union, "a,b", "sm_90", {"gpu": "fake"}, fake(first_kill=rule))
    full, first = stores["full"], stores["first"]
    assert first.db["cells"].count < full.db["cells"].count
    assert set(cells(first)) < set(cells(full))
    # each protocol alone, and each one's inputs at the other's tolerance (the --vs decomposition)
    for protocol in (a, b):
        for t in (1e-2, 1e-3):
            for floor in (None, 1e-3):  # audits leave quiet cells unloaded: gaps must still be told apart
                mine, theirs = (run_protocol(protocol, load_matrices(s, floor), t) for s in (first, full))
                assert mine.detected == theirs.detected and mine.detected[problem.key]
                assert not mine.missing_cells
    # outside the run's tolerances the gaps can matter, and are reported as missing, not scored
    assert run_protocol(a, load_matrices(first), 1.0).missing_cells
    # no full rows: suites see none of these mutants until a full run fills them
    assert first.full_rows() == {problem.key: 0.0} and not load_matrices(first, full_rows=True)
    again = run_evaluation(first, [problem], union, "a,b", "sm_90", {"gpu": "fake"}, fake(first_kill=[a, b]))
    assert again.cells == 0  # resumed: what stored cells settle is not asked for again
    run_evaluation(first, [problem], union, "a,b", "sm_90", {"gpu": "fake"}, fake())
    assert set(cells(first)) == set(cells(full)) and first.full_rows() == {}
    assert set(load_matrices(first, full_rows=True)[0].mutants) == set(ids)


def test_first_kill_stops_only_where_every_witness_tolerance_is_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol

    # b is judged at 1e-3, as kbv is; an audit at 1e-2 (the official check's) counts b's kills as witnesses
    b = Protocol("b", "", 1e-3, ({"trials": 2},))
    problem = ProblemSet.discover().get("demo/3")
    first, second = (s.id for s in b.specs(problem))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    found = {}
    for witnesses in ((), (1e-2,)):
        store, ids = seeded_store(tmp_path / f"w{len(witnesses)}.db")
        faint = ids[0]
        # b's first input kills it at 1e-3 only; its second at every tolerance
        monkeypatch.setenv("KBM_FAKE", json.dumps({"margins": {faint: {first: 5e-3, second: 0.5}}}))
        run_evaluation(store, [problem], b.specs, "b", "sm_90", {"gpu": "fake"},
                       fake(first_kill=[b], witness_tolerances=witnesses))
        found[witnesses] = run_protocol(b, load_matrices(store), 1e-2)
        assert faint in run_protocol(b, load_matrices(store)).detected[problem.key]
        assert (faint, second) in cells(store) if witnesses else (faint, second) not in cells(store)
    # the stop at b's own tolerance left the 1e-2 witness unknown; judged at 1e-2 too, it is found
    assert faint in found[(1e-2,)].detected[problem.key] and not found[(1e-2,)].missing_cells
    assert faint not in found[()].detected[problem.key] and found[()].undecided_mutants[problem.key] == {faint}


def test_first_kill_runs_no_cell_on_an_input_valid_at_none_of_its_tolerances(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol

    # the correct kernel misses the scaled input by 0.5: no audit at 1e-2 or tighter can use its cells
    a = Protocol("a", "", 1e-2, ({"trials": 1}, {"trials": 1, "transforms": [{"op": "scale", "by": 3.0}]}))
    problem = ProblemSet.discover().get("demo/3")
    scaled = a.specs(problem)[1].id
    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", json.dumps({"invalid": ["scale"]}))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    summary = run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"}, fake(first_kill=[a]))
    assert summary.problems == {problem.key: "done"}
    on = {i for _, i in cells(store)}
    assert a.specs(problem)[0].id in on and scaled not in on
    result = run_protocol(a, load_matrices(store))
    assert not result.missing_cells and [r["input"] for r in result.false_rejections] == [scaled]
    again = run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"}, fake(first_kill=[a]))
    assert again.cells == 0  # resumed from its stored check: still nothing to run there
    run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"}, fake())
    assert scaled in {i for _, i in cells(store)}  # a run without first kills fills full rows, there too


def test_a_dry_run_counts_the_cells_a_run_then_writes_and_stores_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol

    a = Protocol("a", "", 1e-2, ({"trials": 3},))
    problem = ProblemSet.discover().get("demo/3")
    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))

    def plan() -> dict[str, int]:
        before = (store.db["runs"].count, store.db["inputs"].count, store.samples())
        planned = run_evaluation(store.scratch_copy(), [problem], a.specs, "a", "sm_90", {"gpu": "fake"},
                                 fake(dry_run=True)).planned
        assert (store.db["runs"].count, store.db["inputs"].count, store.samples()) == before
        return planned

    fresh = plan()  # nothing checked yet: every cell waits on its input's check (the probe's among them)
    assert fresh == {"problems": 1, "mutants": len(ids), "cells": 0, "unchecked": 4, "cells_unchecked": len(ids) * 4}
    run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"}, fake(sample=0.5))
    half = plan()
    assert half["unchecked"] == 0 and 0 < half["mutants"] < len(ids)
    rest = run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"}, fake())
    assert rest.cells == half["cells"] and plan()["cells"] == 0


def test_an_input_whose_reference_raised_is_checked_again_before_any_mutant_is_compiled_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol
    from kbm_toolkit.vocabulary import REFERENCE_RAISED

    a = Protocol("a", "", 1e-2, ({"trials": 2},))
    problem = ProblemSet.discover().get("demo/3")
    store, ids = seeded_store(tmp_path / "s.db")
    monkeypatch.syspath_prepend(str(REPO / "tests"))

    def run(behaviour: dict[str, Any], **options: Any) -> Any:
        monkeypatch.setenv("KBM_FAKE", json.dumps(behaviour))
        return run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"}, fake(**options))

    run({})
    raised = a.specs(problem)[1].id
    sh, run_id = store.db.execute("select substrate_hash, run from input_checks where input = ?", [raised]).fetchone()
    store.db.execute("delete from cells where input = ?", [raised])
    store.record_input_check(sh, run_id, {"input": raised, "valid": False, "note": f"{REFERENCE_RAISED} RuntimeError: x"})
    # every other cell is stored: no mutant is compiled, only the input is checked again
    plan = run_evaluation(store.scratch_copy(), [problem], a.specs, "a", "sm_90", {"gpu": "fake"},
                          fake(dry_run=True)).planned
    assert plan == {"problems": 1, "mutants": 0, "cells": 0, "unchecked": 1, "cells_unchecked": len(ids)}
    again = run({"raises": [raised]})  # it raises again: the problem is done, with no cell on it
    assert again.problems == {problem.key: "done"} and again.cells == 0
    passed = run({})  # it passes now: its cells wait for the next run, and this one says so
    assert passed.cells == 0 and passed.problems[problem.key] == (
        f"incomplete: 1 input whose reference had raised passed the check this time; the same command runs "
        f"{len(ids)} mutants on it")
    last = run({})
    assert last.problems == {problem.key: "done"} and last.cells == len(ids)
    assert {m for m, i in cells(store) if i == raised} == set(ids)


def test_first_kill_runs_past_the_full_rows_keep_their_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol

    a = Protocol("a", "", 1e-2, ({"trials": 3},))
    store, _ = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_FAKE", "{}")
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")
    for share, first_kill in ((0.2, None), (0.5, [a]), (None, [a])):  # the pool's order: full rows, then first kill
        run_evaluation(store, [problem], a.specs, "a", "sm_90", {"gpu": "fake"},
                       fake(sample=share, first_kill=first_kill))
    # each run's planning marks the problem begun; that must not claim full rows its first kills skipped
    assert store.samples() == {} and store.full_rows() == {problem.key: 0.2}
    # nor does a run of other inputs without first kills (the probe alone, say): a's rows stay partial
    b = Protocol("b", "", 1e-2, ({"trials": 1, "seed": 7},))
    run_evaluation(store, [problem], b.specs, "b", "sm_90", {"gpu": "fake"}, fake())
    assert store.full_rows() == {problem.key: 0.2}
    run_evaluation(store, [problem], lambda p: a.specs(p) + b.specs(p), "a,b", "sm_90", {"gpu": "fake"}, fake())
    assert store.full_rows() == {}  # a's inputs again, without first kills: every row full


def test_merging_keeps_the_wider_share_of_full_rows() -> None:
    a, b = Store(":memory:"), Store(":memory:")
    problem = ProblemSet.discover().get("demo/3")
    for store in (a, b):
        store.record_problem(problem)
    a.widen_sample(problem.key, 0.2)
    a.widen_sample(problem.key, 0.5, full_rows=False)  # first-kill beyond the full 20%
    b.widen_sample(problem.key, 0.3)
    assert a.full_rows() == {problem.key: 0.2}
    a.merge(b)
    assert a.samples() == {problem.key: 0.5} and a.full_rows() == {problem.key: 0.3}


def test_under_first_kill_a_crash_settles_only_its_own_inputs_protocols(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.protocols.protocol import Protocol
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol

    a = Protocol("a", "", 1e-2, ({"trials": 2},))
    b = Protocol("b", "", 1e-2, ({"trials": 2, "seed_offset": 3},))  # inputs of b only, run first

    def union(problem) -> list[InputSpec]:
        return list({s.id: s for p in (b, a) for s in p.specs(problem)}.values())

    store, ids = seeded_store(tmp_path / "s.db")
    poisoner = ids[0]
    monkeypatch.setenv("KBM_FAKE", json.dumps({poisoner: "poison"}))
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    problem = ProblemSet.discover().get("demo/3")
    run_evaluation(store, [problem], union, "b,a", "sm_90", {"gpu": "fake"}, fake(first_kill=[a, b]))
    real = {s.id for s in union(problem)}
    crashed = [k for k, v in cells(store).items() if k[0] == poisoner and k[1] in real]
    # one crash for b, then a's first input (a crash stop would have left a without a cell)
    assert [cells(store)[k][0] for k in crashed] == ["crash", "crash"]
    for protocol in (a, b):
        result = run_protocol(protocol, load_matrices(store))
        assert poisoner in result.detected[problem.key] and not result.missing_cells


def test_the_compile_pool_yields_the_cpu_to_workers_and_spares() -> None:
    from kbm_toolkit.evaluation.compiling import COMPILE_NICENESS, compile_pool

    with compile_pool(1) as pool:
        assert pool.submit(os.nice, 0).result() == min(os.nice(0) + COMPILE_NICENESS, 19)


def test_checks_stored_without_a_runs_margins_get_them_added_once(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.judging import PYTORCH_DEFAULT, margin_key

    store, _ = seeded_store(tmp_path / "s.db")
    problem = ProblemSet.discover().get("demo/3")
    evaluate(store, monkeypatch, {}, margins=[])
    rows = list(store.db["input_checks"].rows)
    assert rows and all(r["margins"] is None for r in rows)  # a run asked for none: as before schema m013
    cells_before = store.db["cells"].count
    wanted = [(PYTORCH_DEFAULT, "output", 0.0), (PYTORCH_DEFAULT, "output", 1.0)]
    summary = evaluate(store, monkeypatch, {}, margins=wanted, checks_only=True)
    assert summary.problems == {problem.key: "done"} and store.db["cells"].count == cells_before
    for r in store.db["input_checks"].rows_where("margins is not null"):
        assert set(json.loads(r["margins"])) == {margin_key(*m) for m in wanted}
        assert json.loads(r["margins"])[margin_key(*wanted[1])] == r["margin"]  # the fake's references agree
    ids = [s.id for s in specs_for(problem)]  # the run's inputs; the probe input gets none
    added = {r["input"] for r in store.db["input_checks"].rows_where("margins is not null")}
    assert added == {r["input"] for r in store.db["input_checks"].rows_where("valid = 1") if r["input"] in ids}
    assert len(added) == 3
    runs = store.db["runs"].count
    again = evaluate(store, monkeypatch, {}, margins=wanted, checks_only=True)
    assert again.problems == {problem.key: "done"} and store.db["runs"].count == runs + 1


def test_new_cells_carry_every_margin_the_run_asks_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.judging import PYTORCH_DEFAULT, margin_key

    store, _ = seeded_store(tmp_path / "s.db")
    wanted = [(PYTORCH_DEFAULT, "output", 1.0)]
    evaluate(store, monkeypatch, {}, margins=wanted)
    passing = list(store.db["cells"].rows_where("outcome = 'pass'"))
    assert passing and all(json.loads(c["margins"]) == {margin_key(*wanted[0]): c["margin"]} for c in passing)


def test_redo_overwritten_measures_again_only_the_cells_after_a_restored_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.store.kill_matrix import RESTORED_NOTE

    store, ids = seeded_store(tmp_path / "s.db")
    evaluate(store, monkeypatch, {})
    share = store.db.execute("select sample, full_rows from problems").fetchall()
    first = store.latest_run()
    target = specs_for(ProblemSet.discover().get("demo/3"))[1].id
    writer, at = store.db.execute("select mutant, rowid from cells where input = ? order by rowid limit 1 offset 2",
                                  [target]).fetchone()
    # every later cell of the problem in that run, on any input: the weights it may have written
    # were cached across inputs and never checked
    after = {(m, i) for m, i in store.db.execute("select mutant, input from cells where rowid > ?", [at])}
    probe = store.db.execute("select c.mutant, c.input, c.rowid from cells c join inputs i on i.id = c.input "
                             "where i.label = 'probe' order by c.rowid desc limit 1").fetchone()
    assert {i for _, i in after} > {target} and probe[2] < at
    # a writer restored from its copies, and every cell garbled, to see which ones come back
    store.db.execute("update cells set note = ? where mutant = ? and input = ?", [RESTORED_NOTE, writer, target])
    store.db.execute("update cells set outcome = 'value', margin = 9.5")
    store.db.conn.commit()
    suspects = store.overwrite_suspects("demo/3_LayerNorm")
    assert {(m, i) for i, ms in suspects.items() for m in ms} == after
    assert store.overwrite_suspects("demo/1_ReLU") == {}

    redo = {"demo/3_LayerNorm": after}
    summary = evaluate(store, monkeypatch, {}, redo=redo, rerun_crashers=True)  # no probe, only these mutants
    assert summary.cells == len(after)
    rows = {(r["mutant"], r["input"]): r for r in store.db["cells"].rows}
    for pair in after:  # measured again in place, by the new run, as the fake measures it
        assert rows[pair]["run"] != first and rows[pair]["outcome"] == "pass"
    garbled = {k for k, r in rows.items() if r["outcome"] == "value"}
    assert garbled == set(rows) - after  # nothing else ran: not the writer, not a cell before it
    assert store.db.execute("select sample, full_rows from problems").fetchall() == share  # shares unchanged
    assert store.overwrite_suspects() == {}  # measured again by a run with no restored writer
    kept = {(r["mutant"], r["input"]): r for r in store.db["superseded_cells"].rows}
    assert set(kept) == after  # what the redo replaced, kept as it was
    assert all(r["outcome"] == "value" and r["margin"] == 9.5 and r["run"] == first and r["superseded_by"] != first
               for r in kept.values())


def test_a_writer_on_the_probe_taints_only_the_probes_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.store.kill_matrix import RESTORED_NOTE

    store, ids = seeded_store(tmp_path / "s.db")
    evaluate(store, monkeypatch, {})
    probe_cells = store.db.execute("select c.mutant, c.input, c.rowid from cells c join inputs i on i.id = c.input "
                                   "where i.label = 'probe' order by c.rowid").fetchall()
    writer, probe, at = probe_cells[0]
    store.db.execute("update cells set note = ? where mutant = ? and input = ?", [RESTORED_NOTE, writer, probe])
    store.db.conn.commit()
    assert store.overwrite_suspects() == {probe: {m for m, _, r in probe_cells if r > at}}


def test_an_audit_counts_the_cells_measured_after_a_restored_write(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kbm_toolkit.analysis.score import audit_store
    from kbm_toolkit.cli import cli
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.store.kill_matrix import RESTORED_NOTE

    store, ids = seeded_store(tmp_path / "s.db")
    evaluate(store, monkeypatch, {})
    kb = load_protocol("kernelbench")
    assert audit_store(store, kb, [kb])["overwrite_suspects"] == 0
    writer, at = store.db.execute("select mutant, rowid from cells order by rowid desc limit 1 offset 4").fetchone()
    store.db.execute("update cells set note = ? where mutant = ? and rowid = ?", [RESTORED_NOTE, writer, at])
    store.db.conn.commit()
    assert audit_store(store, kb, [kb])["overwrite_suspects"] == 4  # the four cells after it
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "-a", "kernelbench", "--no-run"])
    assert "Measured after an overwrite: 4 cells" in " ".join(result.output.split())


def test_a_spare_keeps_one_input_built_ahead_keyed_as_a_task_looks_it_up(monkeypatch: pytest.MonkeyPatch) -> None:
    import functools

    import torch

    import kbm_toolkit.cuda.reference as reference
    from kbm_toolkit.evaluation import cell_task as ct

    # the GPU's parts on the CPU: memory to spare, a reference built there
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (10, 10))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(reference, "run_reference", functools.partial(reference.run_reference, device="cpu"))
    monkeypatch.setattr(reference, "strict_fp32_references", lambda: None)
    monkeypatch.setattr(ct, "_PREPARED", {})
    monkeypatch.setattr(ct, "_AHEAD_MODELS", [])
    problem = ProblemSet.discover().get("demo/1")
    first, second = specs_for(problem)[:2]
    margins = [["strict-fp32", "output", 1.0], ["pytorch-default", "output", 1.0]]
    ct.prepare({"problem": problem.record(), "spec": first.record(), "margins": margins})
    assert list(ct._PREPARED) == [(problem.key, first.id, ("pytorch-default",))]
    ct.prepare({"problem": problem.record(), "spec": second.record(), "margins": []})
    assert list(ct._PREPARED) == [(problem.key, second.id, ())]  # the newer input replaces the older
    built = ct._PREPARED[(problem.key, second.id, ())]
    ct.prepare({"problem": problem.record(), "spec": second.record(), "margins": []})
    assert ct._PREPARED[(problem.key, second.id, ())] is built  # the same input again: kept, not built anew
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (3, 10))  # under 40% free: nothing built ahead
    ct.prepare({"problem": problem.record(), "spec": first.record(), "margins": []})
    assert ct._PREPARED == {}


def test_a_run_with_redzones_says_so_and_an_unknown_value_stops_it_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.errors import OptionError

    store, _ = seeded_store(tmp_path / "s.db")
    monkeypatch.setenv("KBM_REDZONES", "1")  # the fake evaluator allocates nothing: the run's record only
    evaluate(store, monkeypatch, {})
    env = json.loads(store.db.execute("select environment from runs order by id desc").fetchone()[0])
    assert env["redzones"] is True and "stress" not in env
    runs = store.db["runs"].count
    monkeypatch.setenv("KBM_REDZONES", "on")
    with pytest.raises(OptionError, match="KBM_REDZONES='on'"):
        evaluate(store, monkeypatch, {})
    assert Store(tmp_path / "s.db").db["runs"].count == runs
