"""bench/pool_wall_clock.py: the pool's build time summed from the runs a store records."""

from __future__ import annotations

import hashlib

import pytest

from kbm_toolkit.mutate import in_sample
from kbm_toolkit.paths import shipped_store_path
from kbm_toolkit.store import Store

from conftest import load_script


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
