"""Whole networks against single operators: Table 5, Table 1's level-3 column and Fig. 7, from a
store with placed level-3 mutants beside operator-scale ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbm_toolkit.analysis.depth import depth
from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.report.tables import tables_markdown
from kbm_toolkit.store import Store
from kbm_toolkit.vocabulary import Accounting

KB, HEAD = load_protocol("kernelbench"), load_protocol("kernelbench-head")  # 1e-2 and 1e-4, the official inputs

KILLED, TIGHT, QUIET = 0.5, 5e-3, 1e-6
"""A cell's margin: killed at 1e-2; only the 1e-4 tolerance sees it; nothing sees it."""


def _add(store: Store, problem: Problem, mutants: dict[str, tuple[float, int | None, int | None]]) -> None:
    """`mutants`: id -> (margin on every official input, position, launches)."""
    store.record_problem(problem)
    for mid, (_, position, launches) in mutants.items():
        store.db["mutants"].insert({"id": mid, "problem": problem.key, "substrate_hash": "h", "rule": f"r-{mid}",
                                    "family": "arithmetic", "status": "distinct", "name": mid,
                                    "position": position, "launches": launches,
                                    "launch": f"k#{position}" if position is not None else None})
    specs = KB.specs(problem)
    store.record_inputs(specs, "kernelbench")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for s in specs:
        store.record_input_check("h", run, {"input": s.id, "valid": True, "outcome": "pass", "margin": 1e-7,
                                            "max_abs": 1e-7, "ref_abs_max": 1.0, "ref_abs_mean": 0.5})
    store.record_cells(run, [{"mutant": m, "input": s.id, "outcome": "pass", "margin": margin}
                             for m, (margin, _, _) in mutants.items() for s in specs])


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "kbm.db")
    path = tmp_path / "p.py"
    path.write_text("")
    # an operator: two killed, one only the tight tolerance sees, one nothing sees
    _add(store, Problem("level1/5_Op", "level1", 5, "Op", path, "kernelbench"),
         {"o1": (KILLED, None, None), "o2": (KILLED, None, None), "o3": (TIGHT, None, None), "o4": (QUIET, None, None)})
    # a network of 8 launches: the even launches' mutants are killed; of the odd ones, launch 1's is
    # seen only at 1e-4 and launches 3, 5 and 7's by nothing
    margins = {0: KILLED, 1: TIGHT, 2: KILLED, 3: QUIET, 4: KILLED, 5: QUIET, 6: KILLED, 7: QUIET}
    _add(store, Problem("level3/7_Net", "level3", 7, "Net", path, "kernelbench"),
         {f"n{p}": (m, p, 8) for p, m in margins.items()})
    return store


def test_survival_and_misses_at_each_scale_per_network_and_by_depth(store: Store) -> None:
    found = depth(KB, load_matrices(store), [KB, HEAD], Accounting.UNION)
    assert (found.operator.distinct, found.operator.survived, found.operator.witnessed, found.operator.missed) == \
        (4, 2, 3, 1)
    a = found.architecture
    assert (a.distinct, a.survived, a.witnessed, a.missed) == (8, 4, 5, 1)
    assert a.survival_pct == 50.0 and a.miss_pct == 20.0
    [net] = found.networks
    assert net.problem == "level3/7_Net" and net.launches == 8
    # quartiles of 8 launches: (0, 1), (2, 3), (4, 5), (6, 7)
    assert [(q.distinct, q.survived, q.witnessed, q.missed) for q in found.quartiles] == \
        [(2, 1, 2, 1), (2, 1, 1, 0), (2, 1, 1, 0), (2, 1, 1, 0)]


def test_misses_count_only_what_is_witnessed_at_the_checks_tolerance(store: Store) -> None:
    # the paper's accounting: what only 1e-4 sees is no witness against a check at 1e-2
    found = depth(KB, load_matrices(store), [KB, HEAD])
    assert (found.operator.witnessed, found.operator.missed) == (2, 0)
    assert (found.architecture.witnessed, found.architecture.missed, found.architecture.survived) == (4, 0, 4)


def test_the_tables_have_table_5_and_a_level_3_column(store: Store) -> None:
    text = tables_markdown(store, [KB], [KB, HEAD], accounting=Accounting.UNION)
    assert "|  | levels 1–2 | level 3 |" in text
    assert "| Distinct mutants | 4 | 8 |" in text
    assert "| witnessed, missed by kernelbench | 1 | 1 |" in text
    assert ("Table 5: whole networks against single operators, kernelbench, over the mutants witnessed by any of "
            "kernelbench, kernelbench-head, each at its own tolerance (the union accounting)\n") in text
    assert "| operator scale (levels 1–2) | 4 | 50.0% | 3 | 33.3% |" in text
    assert "| architecture scale (level 3) | 8 | 50.0% | 5 | 20.0% |" in text
    assert "| level 3, quartile 1 of depth (input end) | 2 | 50.0% | 2 | 50.0% |" in text
    # Fig. 7b's one point: the network's launches, and the same survival and misses as its column
    assert "Per network (Fig. 7b's points), fewest launches first" in text
    assert "| level3/7_Net | 8 | 8 | 50.0% | 5 | 20.0% |" in text


def test_the_tables_are_for_the_official_check_wherever_it_is_listed(store: Store) -> None:
    text = tables_markdown(store, [HEAD, KB], [KB, HEAD], accounting=Accounting.UNION)  # as `report --tables -a kernelbench-head -a kernelbench`
    assert "Table 5: whole networks against single operators, kernelbench, over the mutants witnessed by" in text
    assert "| witnessed, missed by kernelbench | 1 | 1 |" in text
    assert "missed by kernelbench-head |" not in text.split("Table 2")[0]


def test_a_store_without_level_3_keeps_one_column_and_no_table_5(tmp_path: Path) -> None:
    store = Store(tmp_path / "kbm.db")
    path = tmp_path / "p.py"
    path.write_text("")
    _add(store, Problem("level1/5_Op", "level1", 5, "Op", path, "kernelbench"), {"o1": (KILLED, None, None)})
    text = tables_markdown(store, [KB], [KB])
    assert "Table 5" not in text and "|  | count |" in text


def test_the_report_draws_survival_against_launches_and_by_depth(store: Store, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from kbm_toolkit.report.figures import write_report

    page = write_report(store, [HEAD, KB], tmp_path / "report")  # the official check listed second
    assert (tmp_path / "report" / "depth.png").stat().st_size > 0
    assert "Whole networks: survival against launch count, and by depth" in page.read_text()
    drawn = (tmp_path / "report" / "depth.svg").read_text()
    assert "surviving kernelbench (%)" in drawn and "surviving kernelbench-head" not in drawn


def test_the_per_network_table_lists_networks_fewest_launches_first(store: Store, tmp_path: Path) -> None:
    _add(store, Problem("level3/9_Small", "level3", 9, "Small", tmp_path / "p.py", "kernelbench"),
         {"s0": (KILLED, 0, 2), "s1": (QUIET, 1, 2)})
    text = tables_markdown(store, [KB], [KB, HEAD])
    rows = [line for line in text.split("Per network")[1].splitlines() if line.startswith("| level3/")]
    assert rows == ["| level3/9_Small | 2 | 2 | 50.0% | 1 | 0.0% |", "| level3/7_Net | 8 | 8 | 50.0% | 4 | 0.0% |"]
