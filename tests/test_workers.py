"""The worker machinery with real processes that crash and hang."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest

from kbm_toolkit.errors import ProblemError
from kbm_toolkit.evaluation.workers import Worker, WorkerClosed


def task(command: dict) -> object:
    """A worker target for these tests (imported by name in the child)."""
    what = command["do"]
    if what == "echo":
        return {"pid": os.getpid(), "value": command["value"]}
    if what == "crash":
        os._exit(139)  # as a CUDA illegal-address abort would end the process
    if what == "hang":
        time.sleep(3600)
    if what == "env":
        return os.environ.get(command["name"])
    if what == "kbm-error":
        raise ProblemError("bad problem", "somewhere.py")
    raise ValueError("unexpected")


TARGET = "test_workers:task"

AHEAD: list = []
"""What this process was handed to prepare, as a spare (`ahead`)."""


def ahead(payload: object) -> None:
    """A `prepare` function for these tests: keep the payload, for the task this child may get."""
    AHEAD.append(payload)


def told(command: dict) -> object:
    """A worker target that answers what its child prepared before the task came."""
    if command["do"] == "crash":
        os._exit(139)
    return {"pid": os.getpid(), "ahead": list(AHEAD)}


def slow_ahead(payload: object) -> None:
    """A `prepare` function that takes a while, as building an input ahead does."""
    time.sleep(1.0)


def when(command: dict) -> dict:
    """A worker target that answers when its task was sent and when its child last finished work ahead."""
    return {"sent_at": command["sent_at"], "prepared_at": command.get("prepared_at"), "began": time.time()}


def nap() -> dict[str, float]:
    """A warm-up that reports its one part, as `cell_task.warm_up` reports its imports, context and handles."""
    time.sleep(0.3)
    return {"nap": 0.3}


def long_nap() -> dict[str, float]:
    """A warm-up long enough for a run to stop in the middle of it."""
    time.sleep(1.5)
    return {"nap": 1.5}


def test_results_come_back_from_one_long_lived_worker() -> None:
    with Worker(TARGET) as worker:
        a = worker.run({"do": "echo", "value": 1}, timeout=60)
        b = worker.run({"do": "echo", "value": 2}, timeout=60)
    assert (a.status, a.value["value"], b.value["value"]) == ("ok", 1, 2)
    assert a.value["pid"] == b.value["pid"] != os.getpid()


def test_a_crash_costs_one_restart_and_the_next_task_runs() -> None:
    with Worker(TARGET) as worker:
        first = worker.run({"do": "echo", "value": 0}, timeout=60)
        crashed = worker.run({"do": "crash"}, timeout=60)
        after = worker.run({"do": "echo", "value": 3}, timeout=60)
    assert crashed.status == "crash" and "exit code" in crashed.message
    assert after.status == "ok" and after.value["pid"] != first.value["pid"]
    assert worker.restarts == 1


def test_a_hang_is_killed_at_the_deadline_and_the_next_task_runs() -> None:
    with Worker(TARGET) as worker:
        worker.run({"do": "echo", "value": 0}, timeout=60)
        start = time.monotonic()
        hung = worker.run({"do": "hang"}, timeout=1.5)
        elapsed = time.monotonic() - start
        after = worker.run({"do": "echo", "value": 4}, timeout=60)
    assert hung.status == "timeout" and elapsed < 15
    assert after.status == "ok" and after.value["value"] == 4


def test_errors_raised_by_a_task_keep_the_worker() -> None:
    with Worker(TARGET) as worker:
        a = worker.run({"do": "kbm-error"}, timeout=60)
        b = worker.run({"do": "other"}, timeout=60)
        c = worker.run({"do": "echo", "value": 5}, timeout=60)
    assert (a.status, a.message) == ("error", "somewhere.py: bad problem")
    assert b.status == "error" and b.message.startswith("ValueError: unexpected")
    assert c.status == "ok" and worker.restarts == 0


def test_a_task_errors_verdict_names_where_it_was_raised() -> None:
    from kbm_toolkit.evaluation.workers import follow

    with Worker(TARGET) as worker:
        raised = follow(worker.stream({"do": "other"}, 60), {}, lambda reply: None)
        known = follow(worker.stream({"do": "kbm-error"}, 60), {}, lambda reply: None)
    line = next(n for n, text in enumerate(open(__file__), 1) if 'raise ValueError("unexpected")' in text)
    assert raised == f"error: ValueError: unexpected (at test_workers.py:{line} in task)"
    assert known == "error: somewhere.py: bad problem"  # kbm's own errors say where already


def steps(command: dict):
    """A streaming worker target: yields progress, then crashes or hangs on request."""
    for i in range(command["n"]):
        if i == command.get("crash_at"):
            os._exit(134)
        if i == command.get("hang_at"):
            time.sleep(3600)
        yield i


def test_streamed_items_arrive_in_order_then_ok() -> None:
    with Worker("test_workers:steps") as worker:
        replies = list(worker.stream({"n": 4}, timeout=60))
    assert [r.value for r in replies[:-1]] == [0, 1, 2, 3] and replies[-1].status == "ok"


def test_a_stream_ends_with_the_crash_after_the_items_before_it() -> None:
    with Worker("test_workers:steps") as worker:
        replies = list(worker.stream({"n": 5, "crash_at": 2}, timeout=60))
        after = list(worker.stream({"n": 1}, timeout=60))
    assert [r.status for r in replies] == ["item", "item", "crash"]
    assert after[-1].status == "ok" and worker.restarts == 1


def test_a_stream_deadline_can_change_per_message() -> None:
    waits = iter([60, 60, 1.0])
    with Worker("test_workers:steps") as worker:
        replies = list(worker.stream({"n": 5, "hang_at": 2}, timeout=lambda: next(waits)))
    assert [r.status for r in replies] == ["item", "item", "timeout"]


def test_a_spare_worker_replaces_a_crashed_one_at_once() -> None:
    with Worker(TARGET, spares=1) as worker:
        first = worker.run({"do": "echo", "value": 0}, timeout=60)
        spare_pid = worker._spares[0][0].pid
        worker.run({"do": "crash"}, timeout=60)
        after = worker.run({"do": "echo", "value": 1}, timeout=60)
    assert after.value["pid"] == spare_pid != first.value["pid"]


def test_spares_take_over_through_a_burst_of_crashes() -> None:
    with Worker(TARGET, spares=2) as worker:
        worker.run({"do": "echo", "value": 0}, timeout=60)
        for _ in range(3):
            standing = {p.pid for p, _ in worker._spares}
            worker.run({"do": "crash"}, timeout=60)
            assert worker.run({"do": "echo", "value": 1}, timeout=60).value["pid"] in standing  # no cold start
            assert len(worker._spares) == 2  # topped up after each swap
        assert worker.waited_s > 0  # the first child's start, at least


def _warm(worker: Worker) -> None:
    """Wait until every spare of `worker` has said it is warm."""
    deadline = time.monotonic() + 60
    while not all(conn.poll(0.05) for _, conn in worker._spares) and time.monotonic() < deadline:
        pass


def test_a_worker_with_no_warm_spare_borrows_a_siblings() -> None:
    with Worker(TARGET, spares=0) as bursting, Worker(TARGET, spares=2) as calm:
        for w in (bursting, calm):
            w.share_spares([bursting, calm])
        bursting.run({"do": "echo", "value": 0}, timeout=60)
        calm.run({"do": "echo", "value": 0}, timeout=60)
        _warm(calm)
        lent = {p.pid for p, _ in calm._spares}
        assert bursting.run({"do": "crash"}, timeout=60).status == "crash"
        after = bursting.run({"do": "echo", "value": 1}, timeout=60)
        assert after.value["pid"] in lent  # a warm sibling's spare, not a cold start
        assert (bursting.borrowed, bursting.found_warm, calm.borrowed) == (1, 1, 0)
        assert len(calm._spares) == 1  # the lender tops up at its own next start, not the borrower
        assert bursting.run({"do": "crash"}, timeout=60).status == "crash"
        assert bursting.run({"do": "echo", "value": 2}, timeout=60).status == "ok"
        assert bursting.borrowed == 2 and not calm._spares


def test_a_sibling_s_warm_spare_beats_waiting_for_ones_own_standby_to_warm() -> None:
    # in a burst of crashes the spare first in line, briefed with the input, is often still warming
    with Worker(TARGET, warm="test_workers:long_nap", spares=1, prepare="test_workers:ahead") as bursting, \
            Worker(TARGET, warm="test_workers:long_nap", spares=2, prepare="test_workers:ahead") as calm:
        for w in (bursting, calm):
            w.share_spares([bursting, calm])
        calm.run({"do": "echo", "value": 0}, timeout=60)
        _warm(calm)
        bursting.run({"do": "echo", "value": 0}, timeout=60)  # a first start borrows too; its own spare warms from now
        lent = {p.pid for p, _ in calm._spares}
        assert len(lent) == 1
        bursting.prepare("input 1")
        standby = bursting._spares[0][0].pid
        assert bursting._briefed_now(bursting._spares[0]) and not bursting._spares[0][1].poll(0)
        assert bursting.run({"do": "crash"}, timeout=60).status == "crash"
        after = bursting.run({"do": "echo", "value": 1}, timeout=60)
        assert after.value["pid"] in lent and bursting.borrowed == 2  # its first start, and this one
        assert standby in {p.pid for p, _ in bursting._spares}  # still its standby, for the next crash


def test_a_standby_is_not_lent() -> None:
    with Worker(TARGET, spares=0, prepare="test_workers:ahead") as bursting, \
            Worker(TARGET, spares=1, prepare="test_workers:ahead") as briefed:
        for w in (bursting, briefed):
            w.share_spares([bursting, briefed])
        briefed.run({"do": "echo", "value": 0}, timeout=60)
        briefed.prepare("input 1")  # its one spare builds its input now: its standby
        _warm(briefed)
        bursting.run({"do": "echo", "value": 0}, timeout=60)
        assert bursting.borrowed == 0 and len(briefed._spares) == 1


def test_workers_on_other_gpus_lend_nothing() -> None:
    with Worker(TARGET, {"CUDA_VISIBLE_DEVICES": "0"}, spares=0) as bursting, \
            Worker(TARGET, {"CUDA_VISIBLE_DEVICES": "1"}, spares=1) as elsewhere:
        for w in (bursting, elsewhere):
            w.share_spares([bursting, elsewhere])
        elsewhere.run({"do": "echo", "value": 0}, timeout=60)
        _warm(elsewhere)
        bursting.run({"do": "echo", "value": 0}, timeout=60)
        assert bursting.borrowed == 0 and len(elsewhere._spares) == 1


def test_a_worker_measures_how_its_children_warmed_and_whether_a_spare_was_ready() -> None:
    with Worker(TARGET, spares=1) as worker:
        worker.run({"do": "echo", "value": 0}, timeout=60)  # a cold start: no spare yet
        assert worker.found_warm == 0 and len(worker.warm_s) == 1
        deadline = time.monotonic() + 60
        while not worker._spares[0][1].poll(0.1) and time.monotonic() < deadline:
            pass  # let the spare finish warming
        worker.run({"do": "crash"}, timeout=60)
        worker.run({"do": "echo", "value": 1}, timeout=60)
        assert worker.found_warm == 1 and len(worker.warm_s) == 2
        assert all(0 < t < 60 for t in worker.warm_s)
        worker._spares[0][0].kill()  # a spare that dies unused is counted, and replaced
        worker._spares[0][0].join(10)
        worker.run({"do": "crash"}, timeout=60)
        assert worker.run({"do": "echo", "value": 2}, timeout=60).status == "ok"
        assert worker.spares_lost == 1 and worker.found_warm == 1


def test_a_worker_records_where_each_childs_warm_up_went() -> None:
    from kbm_toolkit.evaluation.stats import spare_stats

    with Worker(TARGET, warm="test_workers:nap") as worker:
        worker.run({"do": "echo", "value": 0}, timeout=60)
        worker.run({"do": "crash"}, timeout=60)
        worker.run({"do": "echo", "value": 1}, timeout=60)
    assert len(worker.warm_parts) == len(worker.warm_s) == 2
    for parts, total in zip(worker.warm_parts, worker.warm_s):
        assert set(parts) == {"start", "target", "nap"} and parts["nap"] == 0.3
        assert all(s >= 0 for s in parts.values()) and sum(parts.values()) <= total + 0.05
        assert total >= 0.3  # the nap is inside the spawn-to-warm time
    assert set(spare_stats([worker])["warm_parts_median"]) == {"start", "target", "nap"}


def test_a_closed_worker_starts_no_child_and_says_so() -> None:
    worker = Worker(TARGET, spares=2)
    assert worker.run({"do": "echo", "value": 0}, timeout=60).status == "ok"
    worker.close()
    assert not mp.active_children()
    # a thread still driving tasks when the run stops must not leave orphans behind
    with pytest.raises(WorkerClosed):
        worker.run({"do": "echo", "value": 1}, timeout=60)
    assert not mp.active_children()


def test_a_worker_closed_while_its_child_warms_up_says_closed() -> None:
    import threading

    worker = Worker(TARGET, warm="test_workers:long_nap")
    raised: list[BaseException] = []

    def drive() -> None:  # as a run's thread does, asking for a child that is still warming
        try:
            worker.run({"do": "echo", "value": 1}, timeout=60)
        except BaseException as e:  # noqa: BLE001 - the test looks at what came out
            raised.append(e)

    thread = threading.Thread(target=drive)
    thread.start()
    time.sleep(0.5)
    worker.close()
    thread.join(timeout=30)
    assert [type(e) for e in raised] == [WorkerClosed]  # not an AttributeError from the closed worker's state
    time.sleep(0.2)
    assert not mp.active_children()


def test_a_worker_closed_under_a_task_says_closed_not_crashed() -> None:
    import threading

    worker = Worker(TARGET)
    ended: list[object] = []

    def drive() -> None:  # a run's thread, mid-launch when the run stops
        try:
            ended.append(worker.run({"do": "hang"}, timeout=60))
        except BaseException as e:  # noqa: BLE001 - the test looks at what came out
            ended.append(e)

    thread = threading.Thread(target=drive)
    thread.start()
    time.sleep(1.0)
    worker.close(wait_s=0.2)  # the busy child is killed: no crashed cell may come of it
    thread.join(timeout=30)
    assert [type(e) for e in ended] == [WorkerClosed]
    time.sleep(0.2)
    assert not mp.active_children()


def test_children_forked_from_a_preloading_server_run_crash_and_see_the_parents_environment() -> None:
    os.environ.pop("KBM_TEST_SET_LATER", None)
    with Worker(TARGET, {"KBM_TEST_OWN": "mine"}, preload=("json",)) as worker:  # no spare: each start forks anew
        first = worker.run({"do": "env", "name": "KBM_TEST_OWN"}, timeout=60)
        assert first.value == "mine"
        assert worker.run({"do": "env", "name": "KBM_TEST_SET_LATER"}, timeout=60).value is None
        os.environ["KBM_TEST_SET_LATER"] = "now"  # after the fork server started: the next start carries it
        try:
            assert worker.run({"do": "crash"}, timeout=60).status == "crash"
            assert worker.run({"do": "env", "name": "KBM_TEST_SET_LATER"}, timeout=60).value == "now"
        finally:
            del os.environ["KBM_TEST_SET_LATER"]
    assert worker.restarts == 1


def test_a_prestarted_worker_takes_a_child_that_warmed_before_the_first_task() -> None:
    with Worker(TARGET, warm="test_workers:nap", spares=1) as worker:
        worker.prestart()
        assert len(worker._spares) == 2 and worker._proc is None  # the first child and its spare
        deadline = time.monotonic() + 60
        while not worker._spares[0][1].poll(0.1) and time.monotonic() < deadline:
            pass  # both warm while "the first problem compiles"
        assert worker.run({"do": "echo", "value": 0}, timeout=60).status == "ok"
        assert worker.found_warm == 1 and len(worker._spares) == 1
        worker.prestart()  # once a child works, it does nothing
        assert len(worker._spares) == 1


def test_the_spare_that_takes_over_has_prepared_what_it_was_handed() -> None:
    with Worker("test_workers:told", spares=3, prepare="test_workers:ahead", standbys=2) as worker:
        first = worker.run({"do": "echo"}, timeout=60)
        assert first.value["ahead"] == []  # a child put to work before any payload
        # the standbys warm first: one still starting finds both payloads queued and, by design,
        # prepares only the latest (a loaded CI machine took more than a second to start one)
        deadline = time.monotonic() + 60
        while not all(conn.poll(0.1) for _, conn in worker._spares[:2]) and time.monotonic() < deadline:
            pass
        worker.prepare("input 1")
        time.sleep(0.5)  # prepared, before the next payload comes
        worker.prepare("input 2")  # the latest payload stands
        time.sleep(0.5)  # prepared too: a task already waiting would make a spare skip it (by design)
        standbys = [p.pid for p, _ in worker._spares[:2]]
        assert sorted(worker._briefed) == sorted(standbys)  # the third spare is handed nothing
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        after = worker.run({"do": "echo"}, timeout=60)
        # the first standby took over, having prepared both payloads in order
        assert after.value["pid"] == standbys[0] and after.value["ahead"] == ["input 1", "input 2"]
        # the second is first in line now, and the spare behind it has the standing payload only
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        assert worker.run({"do": "echo"}, timeout=60).value == {"pid": standbys[1], "ahead": ["input 1", "input 2"]}
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        assert worker.run({"do": "echo"}, timeout=60).value["ahead"] == ["input 2"]


def test_a_payload_may_go_to_more_spares_than_the_worker_briefs() -> None:
    with Worker("test_workers:told", spares=3, prepare="test_workers:ahead") as worker:
        worker.run({"do": "echo"}, timeout=60)
        deadline = time.monotonic() + 60
        while not all(conn.poll(0.1) for _, conn in worker._spares) and time.monotonic() < deadline:
            pass  # all three warm: each takes in what it is handed as it comes
        spares = [p.pid for p, _ in worker._spares]
        worker.prepare("probe", standbys=2)
        assert sorted(worker._briefed) == sorted(spares[:2])  # two, the third left for a sibling
        time.sleep(0.5)
        worker.prepare("input 1")  # the worker's own one again
        assert [pid for pid, payload in worker._briefed.items() if payload == "input 1"] == spares[:1]
        time.sleep(0.5)
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        assert worker.run({"do": "echo"}, timeout=60).value == {"pid": spares[0], "ahead": ["probe", "input 1"]}
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        # the second had built the probe, and is first in line now: handed the standing payload too
        assert worker.run({"do": "echo"}, timeout=60).value["pid"] == spares[1]


def test_a_payload_equal_to_the_standing_one_is_not_handed_again() -> None:
    # a restart's `rebuilt` record asks again for the input the spare first in line has built
    with Worker("test_workers:told", spares=2, prepare="test_workers:ahead") as worker:
        worker.run({"do": "echo"}, timeout=60)
        assert worker._spares[0][1].poll(60)  # the spare first in line is warm: it takes in each payload as it comes
        for payload in ({"input": 1}, {"input": 1}, {"input": 2}, {"input": 2}):
            worker.prepare(payload)
            time.sleep(0.3)  # taken in before the next: the spare would not skip it as superseded
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        assert worker.run({"do": "echo"}, timeout=60).value["ahead"] == [{"input": 1}, {"input": 2}]


def test_a_spare_skips_a_payload_a_newer_one_already_supersedes() -> None:
    with Worker("test_workers:told", warm="test_workers:nap", spares=1, prepare="test_workers:ahead") as worker:
        worker.prestart()  # two children warming, 0.3 s each; the first in line is handed both payloads
        worker.prepare("input 1")
        worker.prepare("input 2")  # both wait for its warm-up: the first is skipped
        # the task only once the second is taken in: a task already waiting supersedes it too
        deadline = time.monotonic() + 60
        while not worker._spares[0][1].poll(0.1) and time.monotonic() < deadline:
            pass  # warm: it reads the payloads right after saying so
        time.sleep(0.5)
        assert worker.run({"do": "echo"}, timeout=60).value["ahead"] == ["input 2"]


def test_without_a_prepare_function_nothing_is_handed_to_spares() -> None:
    with Worker("test_workers:told", spares=1) as worker:
        worker.prepare("input 1")
        assert worker.run({"do": "crash"}, timeout=60).status == "crash"
        assert worker.run({"do": "echo"}, timeout=60).value["ahead"] == []


def test_the_fork_server_starts_before_any_worker_asks_for_a_child() -> None:
    import subprocess
    import sys

    script = ("import multiprocessing.forkserver as f\n"
              "from kbm_toolkit.evaluation.workers import start_server\n"
              "assert f._forkserver._forkserver_pid is None\n"
              "start_server(('json',))\n"
              "assert f._forkserver._forkserver_pid is not None\n"
              "assert f._forkserver._preload_modules == ['json']\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_task_sent_while_its_spare_works_ahead_says_when_that_work_ended() -> None:
    with Worker("test_workers:when", spares=1, prepare="test_workers:slow_ahead") as worker:
        assert worker.run({}, timeout=60).value["prepared_at"] is None  # no work ahead: nothing to wait for
        deadline = time.monotonic() + 60
        while not worker._spares[0][1].poll(0.1) and time.monotonic() < deadline:
            pass  # the spare is warm, so it starts on the payload at once
        worker.prepare("input 1")
        time.sleep(0.3)  # it is building ahead now
        worker._kill()  # the active child is gone: the next task goes to the spare, busy for ~0.7 s more
        told = worker.run({}, timeout=60).value
        # the task waited for the work ahead (cell_task's `building ahead`), then only for the pipe
        assert told["sent_at"] < told["prepared_at"] <= told["began"]
        assert told["prepared_at"] - told["sent_at"] > 0.4
