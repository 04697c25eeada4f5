"""bench/pool_wall_clock.py: the pool's build time summed from the runs a store records."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter

import pytest
from support import REPO, load_script

from kbm_toolkit.store import in_sample
from kbm_toolkit.store import shipped_store_path
from kbm_toolkit.store import Store


def _bench():
    return load_script("bench/pool_wall_clock.py")


def test_a_mutants_tenth_is_the_narrowest_sample_that_holds_it() -> None:
    bench = _bench()
    for i in range(2000):
        m = hashlib.sha256(str(i).encode()).hexdigest()
        t = bench.tenth(m)
        assert in_sample(m, t) and (t == 0.1 or not in_sample(m, round(t - 0.1, 1)))


def test_a_run_over_two_tenths_has_its_time_split_by_cells_and_unended_runs_are_named() -> None:
    bench = _bench()
    runs = [{"run": 1, "gpus": 1, "wall_s": 100.0, "cells": 4, "tenths": {0.5: 3, 0.6: 1}},
            {"run": 2, "gpus": 2, "wall_s": None, "cells": 5, "tenths": {0.1: 5}},
            {"run": 3, "gpus": 1, "wall_s": 10.0, "cells": 2, "tenths": {0.6: 2}}]
    result = bench.totals(runs)
    assert result["seconds"] == {1: {0.5: 75.0, 0.6: 35.0}} and result["unknown"] == [2]
    assert bench.run_ids("3, 5-7") == {3, 5, 6, 7}
    with pytest.raises(SystemExit, match="not a run id"):
        bench.run_ids("3-x")


def test_every_cell_of_a_stores_runs_is_placed_in_a_tenth() -> None:
    store = Store(shipped_store_path("demo"), readonly=True)
    runs = _bench().pool_runs(store)
    cells = store.db.execute("select count(*) from cells where run in (select id from runs where kind = 'evaluate')")
    assert runs and sum(r["cells"] for r in runs) == cells.fetchone()[0]
    assert all(sum(r["tenths"].values()) == r["cells"] for r in runs)


def test_the_one_gpu_projection_keeps_measured_time_and_prices_the_rest_at_one_gpu_rates() -> None:
    bench = _bench()
    runs = [{"run": 1, "gpus": 2, "wall_s": 50.0, "cells": 3000, "tenths": {0.1: 1000, 0.3: 2000}},
            {"run": 2, "gpus": 1, "wall_s": 100.0, "cells": 1000, "tenths": {0.2: 1000}},
            {"run": 3, "gpus": 1, "wall_s": None, "cells": 500, "tenths": {0.2: 500}},  # killed: no end
            {"run": 4, "gpus": 1, "wall_s": 30.0, "cells": 3, "tenths": {0.1: 3}}]  # too few cells for a rate
    assert bench.one_gpu_projection(runs)[0.1] == {"cells": 1003, "measured_s": 30.0, "retimed_s": 0.0,
                                                   "projected_s": 100.0, "rate": 10.0, "own_rate": False}
    assert bench.one_gpu_projection(runs)[0.2] == {"cells": 1500, "measured_s": 100.0, "retimed_s": 0.0,
                                                   "projected_s": 50.0, "rate": 10.0, "own_rate": True}
    assert bench.one_gpu_projection(runs)[0.3]["projected_s"] == 200.0  # pooled over tenths measured on one GPU
    with pytest.raises(SystemExit, match="no one-GPU run"):
        bench.one_gpu_projection([runs[0]])


def test_a_retiming_counts_as_measured_prices_its_tenth_and_replaces_time_it_ran_again() -> None:
    bench = _bench()
    runs = [{"run": 1, "gpus": 2, "wall_s": 50.0, "cells": 2000, "tenths": {0.1: 2000}},
            {"run": 4, "gpus": 1, "wall_s": 30.0, "cells": 3, "tenths": {0.1: 3}}]
    half = [{"run": 9, "gpus": 1, "wall_s": 200.0, "cells": 1000, "tenths": {0.1: 1000}}]
    assert bench.one_gpu_projection(runs, half)[0.1] == {"cells": 2003, "measured_s": 230.0, "retimed_s": 200.0,
                                                         "projected_s": 200.0, "rate": 5.0, "own_rate": True}
    whole = [{**half[0], "wall_s": 420.0, "cells": 2100, "tenths": {0.1: 2100}}]
    again = bench.one_gpu_projection(runs, whole, Counter({0.1: 3}))[0.1]  # run 4's cells ran again
    assert again["measured_s"] == 420.0 and again["projected_s"] == 0  # more cells re-timed than here: none left


def test_cells_a_copy_ran_again_are_found_by_mutant_and_input(tmp_path) -> None:
    bench = _bench()
    here, copy = tmp_path / "here.db", tmp_path / "copy.db"
    for path, rows in ((here, [("a", "x", 4), ("b", "x", 4), ("c", "x", 5)]),
                       (copy, [("a", "x", 9), ("b", "x", 4), ("c", "x", 9)])):
        with sqlite3.connect(path) as db:
            db.execute("create table cells (mutant text, input text, run int)")
            db.executemany("insert into cells values (?, ?, ?)", rows)
    runs = [{"run": 4, "gpus": 1, "wall_s": 1.0}, {"run": 5, "gpus": 2, "wall_s": 1.0}]
    assert bench.rerun_cells(here, runs, copy, {9}) == Counter({bench.tenth("a"): 1})  # c ran on two GPUs here


def test_a_retimings_cells_the_store_lacks_are_left_out_of_its_time(tmp_path) -> None:
    bench = _bench()
    pool, copy = tmp_path / "pool.db", tmp_path / "copy.db"
    for path in (pool, copy):
        path.write_bytes(shipped_store_path("demo").read_bytes())
    with sqlite3.connect(pool) as db:  # the copy's run 14 wrote 100 cells the pool never ran
        db.execute("delete from cells where rowid in (select rowid from cells where run = 14 limit 100)")
    (run,) = bench.retimed_runs(pool, copy, {14})
    assert run["extra"] == 100 and sum(run["tenths"].values()) == run["cells"] - 100
    seconds = sum(s for _, s in bench.tenth_rates([run]).values())  # what a re-timing's tenths are credited
    assert seconds == pytest.approx(run["wall_s"] * (run["cells"] - 100) / run["cells"])


def test_a_saved_retiming_reads_back_as_it_ran_and_a_bad_record_is_one_line(tmp_path) -> None:
    bench = _bench()
    runs = [{"run": 7, "gpus": 1, "workers": 2, "wall_s": 12.5, "cells": 30, "tenths": {0.3: 25, 0.4: 3}, "extra": 2}]
    path = tmp_path / "retiming.json"
    bench.save_retiming(path, "copy.db:7", tmp_path / "kb.db", runs, Counter({0.3: 4}))
    assert bench.load_retiming(path) == (runs, Counter({0.3: 4}))
    assert bench.retiming(str(path), tmp_path / "kb.db", []) == (runs, Counter({0.3: 4}))
    path.write_text('{"runs": [{"run": 7}]}')
    with pytest.raises(SystemExit, match=r"retiming.json: not a re-timing record \(KeyError"):
        bench.load_retiming(path)
    with pytest.raises(SystemExit, match="STORE:RUNS with an existing store"):
        bench.retiming(str(tmp_path / "absent.db:44-99"), tmp_path / "kb.db", [])


def test_the_committed_retiming_records_read_back_and_account_for_every_cell() -> None:
    bench = _bench()
    records = sorted((REPO / "bench" / "retimings").glob("*.json"))
    assert records
    for path in records:
        runs, _ = bench.load_retiming(path)
        assert runs and all(r["gpus"] == 1 and r["wall_s"] > 0 for r in runs), path
        assert all(sum(r["tenths"].values()) + r.get("extra", 0) == r["cells"] for r in runs), path
