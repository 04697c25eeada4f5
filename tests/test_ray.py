"""The Ray backend on a local Ray cluster of CPUs, with the fake evaluator (actors reserve no GPU):
the same cells as a local run, through crashes, hangs, a dead actor and a killed parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import kbm_toolkit.evaluation.run as evaluation_run
from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.mutation.campaign import mutate_problems
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import Store, copy_store

from support import REPO

TESTS = str(REPO / "tests")
RULES = [r for r in load_rules() if r.name in ("mul2div", "plus2minus", "minus2plus", "negate-store")]
KEYS = ("demo/1", "demo/3")


def specs_for(problem) -> list[InputSpec]:
    return [InputSpec.make(problem.key, seed, label=f"trial {seed}") for seed in (1, 2, 3)]


def fake(**options: Any) -> RunOptions:
    return RunOptions(**{"target": "fake_evaluator:cell_task", "rules": RULES, "deadline": lambda _: 1.5,
                         **options})


def problems() -> list:
    return [ProblemSet.discover().get(k) for k in KEYS]


def cells(store: Store) -> dict[tuple[str, str], tuple]:
    return {(r["mutant"], r["input"]): (r["outcome"], r["margin"]) for r in store.db["cells"].rows}


def statuses(store: Store) -> dict[str, str]:
    return {r["id"]: r["status"] for r in store.db["mutants"].rows}


def test_kbm_imports_ray_only_for_a_run_that_asks_for_it() -> None:
    code = ("import sys, kbm_toolkit.cli, kbm_toolkit.evaluation.run, kbm_toolkit.evaluation.fill, "
            "kbm_toolkit.evaluation.ray_backend; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ray_without_ray_installed_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the extra
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "run", "--ray", "auto", "demo/1"])
    assert result.exit_code == ExitCode.USAGE
    assert result.output == ("Error: --ray needs Ray, which is not installed here: install the ray extra "
                             "(pip install 'kbm-toolkit[ray]')\n")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """One local Ray cluster of two CPUs for the module; its address, for a second process to join."""
    ray = pytest.importorskip("ray")
    with pytest.MonkeyPatch.context() as mp:
        # the cluster's worker processes import the fake evaluator (and this module's targets)
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")])))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """demo/1 and demo/3 under RULES, as `kbm mutate` leaves them."""
    path = tmp_path_factory.mktemp("pool") / "pool.db"
    with pytest.MonkeyPatch.context() as mp:  # module scope: conftest's own isolation is not up yet
        mp.setenv("KBM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        store = Store(path)
        mutate_problems(store, problems(), "sm_90", workers=1, require_gate=False, rules=RULES)
        store.close()
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, pool: Path) -> dict[str, Any]:
    """The cells and statuses of one local run on the pool, every mutant behaving."""
    path = tmp_path_factory.mktemp("local") / "local.db"
    copy_store(pool, path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        mp.setenv("KBM_FAKE", "{}")
        mp.syspath_prepend(TESTS)
        mp.setattr(evaluation_run, "SPARES", 2)
        store = Store(path)
        run_evaluation(store, problems(), specs_for, "test", "sm_90", {"gpu": "fake"}, fake())
        return {"cells": cells(store), "statuses": statuses(store)}


@pytest.fixture
def fewer_spares(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two spares a worker, not six: this machine may have two CPUs for every child of two workers."""
    monkeypatch.setattr(evaluation_run, "SPARES", 2)
    monkeypatch.syspath_prepend(TESTS)


def test_a_ray_run_gives_the_cells_of_a_local_run_through_crashes_and_hangs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cluster: str, pool: Path, fewer_spares: None) -> None:
    local, remote = tmp_path / "local.db", tmp_path / "ray.db"
    copy_store(pool, local)
    copy_store(pool, remote)
    ids = [r["id"] for r in Store(pool).mutants(status="distinct")]
    probe_crasher, crasher, hanger, poisoner = ids[0], ids[5], ids[7], ids[9]
    monkeypatch.setenv("KBM_FAKE", json.dumps({probe_crasher: "probe-crash", crasher: "crash", hanger: "hang",
                                               poisoner: "poison"}))
    run_evaluation(Store(local), problems(), specs_for, "test", "sm_90", {"gpu": "fake"}, fake())
    summary = run_evaluation(Store(remote), problems(), specs_for, "test", "sm_90", {"gpu": "fake"},
                             fake(ray=cluster, ray_gpus=0, gpus=2))
    assert summary.problems == {p.key: "done" for p in problems()}
    got = cells(Store(remote))
    assert got == cells(Store(local)) and len(got) > 50
    assert statuses(Store(remote)) == statuses(Store(local)) and statuses(Store(remote))[probe_crasher] == "quarantined"
    outcomes = {m: {o for (mm, _), (o, _) in got.items() if mm == m} for m in (crasher, hanger, poisoner)}
    assert "crash" in outcomes[crasher] and "timeout" in outcomes[hanger] and "crash" in outcomes[poisoner]
    # the crash, the hang and the CUDA error each cost one child, swapped in the actor; stats came back
    assert summary.restarts >= 3 and summary.spares["starts"] >= 2 + 3 and summary.spares["warm_s_median"] > 0
    env = json.loads(Store(remote).run(Store(remote).latest_run())["environment"])
    assert env["workers"] == 2


def steps(command: dict) -> Iterator[int]:
    """A streaming target (imported by name in the actor's children): items, a pause between them."""
    for i in range(command["n"]):
        time.sleep(command.get("pause", 0))
        yield i


def stuck() -> None:
    """A warm-up that never ends: the actor hosting it stops answering while it waits."""
    time.sleep(3600)


def test_an_actor_that_dies_ends_the_stream_with_no_reply_and_the_next_task_gets_a_new_one(
        cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    from kbm_toolkit.evaluation.ray_backend import RayWorker

    monkeypatch.syspath_prepend(TESTS)
    with RayWorker("test_ray:steps", num_gpus=0) as worker:
        first = worker._actor
        replies = []
        for reply in worker.stream({"n": 50, "pause": 0.05}, timeout=60):
            replies.append(reply)
            if len(replies) == 3:
                ray.kill(worker._actor)  # the actor's process gone, as when its node is lost
        # the items it had sent, then no final reply: the actor's loss is charged to no mutant
        assert len(replies) >= 3 and {r.status for r in replies} == {"item"}
        assert worker.lost and worker.lost[-1].startswith("the Ray actor died")
        after = list(worker.stream({"n": 2}, timeout=60))
        assert [r.value for r in after[:-1]] == [0, 1] and after[-1].status == "ok"
        assert worker._actor is not first and worker.restarts == 1 and worker.replaced == 1


def test_an_actor_that_stops_answering_is_killed_at_its_deadline(cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.evaluation.ray_backend as backend

    monkeypatch.syspath_prepend(TESTS)
    monkeypatch.setattr(backend, "ANSWER_S", 1.0)  # the parent's grace past the deadline
    with backend.RayWorker("test_ray:steps", warm="test_ray:stuck", num_gpus=0) as worker:
        began = time.monotonic()
        assert list(worker.stream({"n": 1}, timeout=1.0)) == []  # its child never finishes warming up
        assert worker.lost == ["the Ray actor did not answer within 2 s"]
        assert time.monotonic() - began < 30 and worker._actor is None and worker.replaced == 1


def test_a_closed_ray_worker_starts_nothing_and_frees_its_actor(cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbm_toolkit.evaluation.ray_backend import RayWorker
    from kbm_toolkit.evaluation.workers import WorkerClosed

    monkeypatch.syspath_prepend(TESTS)
    worker = RayWorker("test_ray:steps", num_gpus=0)
    stopped: list[BaseException] = []

    def drive() -> None:  # as a run's thread does, mid-task when the run stops
        try:
            list(worker.stream({"n": 1000, "pause": 0.05}, timeout=60))
        except BaseException as e:  # noqa: BLE001 - the test looks at what came out
            stopped.append(e)

    thread = threading.Thread(target=drive)
    thread.start()
    time.sleep(3)
    worker.close(wait_s=0.5)  # the busy child is killed after half a second
    thread.join(timeout=60)
    assert not thread.is_alive() and [type(e) for e in stopped] == [WorkerClosed]
    with pytest.raises(WorkerClosed):
        worker.run({"n": 1}, timeout=60)


def test_an_actor_lost_mid_run_costs_a_retry_and_no_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          cluster: str, pool: Path, reference: dict[str, Any],
                                                          fewer_spares: None) -> None:
    import ray

    import kbm_toolkit.evaluation.ray_backend as backend

    remote = tmp_path / "ray.db"
    copy_store(pool, remote)
    monkeypatch.setenv("KBM_FAKE", "{}")
    made: list[Any] = []
    real = backend.ray_workers

    def kept(*a: Any) -> list[Any]:
        made.extend(real(*a))
        return made

    def kill_one() -> None:  # as a node going down: the one worker's actor, mid-task
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (made and made[0].warm_s):  # its first child is at work
            time.sleep(0.05)
        time.sleep(0.5)
        ray.kill(made[0]._actor)

    monkeypatch.setattr(backend, "ray_workers", kept)
    monkeypatch.setenv("KBM_FAKE_DELAY", "0.03")  # about 2.5 s of cells, both problems on one worker
    killer = threading.Thread(target=kill_one)
    killer.start()
    summary = run_evaluation(Store(remote), problems(), specs_for, "test", "sm_90", {"gpu": "fake"},
                             fake(ray=cluster, ray_gpus=0, gpus=1))
    killer.join()
    assert made[0].replaced == 1 and "the Ray actor died" in made[0].lost[0]
    assert summary.problems == {p.key: "done" for p in problems()}
    assert cells(Store(remote)) == reference["cells"]  # no crash charged to the mutant under way


RUNNER = """
import sys
sys.path.insert(0, {tests!r})
import kbm_toolkit.evaluation.run as er
from kbm_toolkit.store import Store
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.evaluation.options import RunOptions
from kbm_toolkit.evaluation.run import run_evaluation
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.input_spec import InputSpec
# the test module's RULES, specs_for and fake(), restated: a script does not import a test module
if __name__ == "__main__":
    er.SPARES = 2
    rules = [r for r in load_rules() if r.name in ("mul2div", "plus2minus", "minus2plus", "negate-store")]
    run_evaluation(Store({db!r}), [ProblemSet.discover().get(k) for k in {keys!r}],
                   lambda p: [InputSpec.make(p.key, seed, label=f"trial {{seed}}") for seed in (1, 2, 3)],
                   "test", "sm_90", {{}}, RunOptions(target="fake_evaluator:cell_task", rules=rules,
                   deadline=lambda _: 1.5, ray={address!r}, ray_gpus=0, gpus=2))
"""


def test_a_parent_killed_mid_run_resumes_to_the_same_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           cluster: str, pool: Path, reference: dict[str, Any],
                                                           fewer_spares: None) -> None:
    part = tmp_path / "part.db"
    copy_store(pool, part)
    monkeypatch.setenv("KBM_FAKE", "{}")
    total = len(reference["cells"])
    script = tmp_path / "runner.py"
    script.write_text(RUNNER.format(tests=TESTS, db=str(part), keys=KEYS, address=cluster))
    env = {**os.environ, "KBM_FAKE": "{}", "KBM_FAKE_DELAY": "0.05", "PYTHONPATH": TESTS}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and Store(part).db["cells"].count < total // 3:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the parent and its compile pool at once; its actors are Ray's
    proc.wait()
    halfway = Store(part).db["cells"].count
    assert 0 < halfway < total
    # the next run (here, this process on the same cluster) resumes from the store
    monkeypatch.setenv("KBM_FAKE_DELAY", "0")
    run_evaluation(Store(part), problems(), specs_for, "test", "sm_90", {"gpu": "fake"},
                   fake(ray=cluster, ray_gpus=0, gpus=2))
    assert cells(Store(part)) == reference["cells"] and statuses(Store(part)) == reference["statuses"]


def test_kbm_run_ray_runs_one_worker_per_gpu_of_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            cluster: str, pool: Path, fewer_spares: None) -> None:
    import kbm_toolkit.evaluation.fill as fill
    import kbm_toolkit.evaluation.ray_backend as backend

    asked: list[RunOptions] = []

    def on_cpus(store: Store, problems: list, specs: Any, source: str, arch: str, env: dict,
                options: RunOptions) -> Any:
        asked.append(options)
        return run_evaluation(store, problems, specs, source, arch, env,
                              fake(**{**options.__dict__, "target": "fake_evaluator:cell_task", "rules": RULES,
                                       "deadline": lambda _: 1.5, "ray_gpus": 0}))

    # the cluster says it has two GPUs (its actors then reserve none: this one has CPUs only)
    monkeypatch.setattr(backend, "describe_device", lambda address, num_gpus=1.0: {
        "cuda": True, "arch": "sm_90", "gpu": "fake", "ray": address, "ray_gpus": 2})
    monkeypatch.setattr(fill, "run_evaluation", on_cpus)
    monkeypatch.setenv("KBM_FAKE", "{}")
    store = tmp_path / "s.db"
    copy_store(pool, store)
    runner = CliRunner()
    result = runner.invoke(cli, ["--store", str(store), "run", "--ray", cluster, "--inputs", "kernelbench",
                                 "--sample", "0.3", *KEYS])
    assert result.exit_code == 0, result.output
    assert asked[0].ray == cluster and asked[0].gpus == 2
    run = Store(store).run(Store(store).latest_run())
    assert json.loads(run["environment"])["ray"] == cluster and Store(store).db["cells"].count > 0
    too_many = runner.invoke(cli, ["--store", str(store), "run", "--ray", cluster, "--gpus", "3", *KEYS])
    assert too_many.exit_code == ExitCode.USAGE
    assert too_many.output.strip().splitlines()[-1] == f"Error: --gpus 3: the Ray cluster at {cluster} has 2 GPUs"


def test_a_cluster_without_gpus_is_no_device_for_kbm_run(tmp_path: Path, cluster: str, pool: Path) -> None:
    from kbm_toolkit.evaluation.ray_backend import describe_device

    assert describe_device(cluster) == {"cuda": False, "ray": cluster, "ray_gpus": 0}  # no actor asked for
    store = tmp_path / "s.db"
    copy_store(pool, store)
    result = CliRunner().invoke(cli, ["--store", str(store), "run", "--ray", cluster, *KEYS])
    assert result.exit_code == ExitCode.NO_DEVICE
    assert result.output.strip().splitlines()[-1] == (f"Error: --ray {cluster}: no GPU worker of the Ray cluster "
                                                      "sees a CUDA device (it has 0 GPUs)")
