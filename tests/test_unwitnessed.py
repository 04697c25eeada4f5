"""What no input witnesses (`kbm report --tables`' last section): survivors told apart by their cells."""

from __future__ import annotations

from click.testing import CliRunner

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.analysis.unwitnessed import CHANGED, NOT_RUN, SAME, unwitnessed
from kbm_toolkit.cli import cli
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.store import Store

from support import seed

KB, KBV = load_protocol("kernelbench"), load_protocol("kbv")


def seeded(store: Store, demo: ProblemSet) -> None:
    """`seed`'s A–D, and E (off the correct kernel's margin by less than any tolerance on the
    official inputs) and F (no cell at all)."""
    problem = demo.get("demo/1")
    ids = seed(store, problem)
    for mid, family in (("E", "indexing"), ("F", "synchronization")):
        store.db["mutants"].insert({"id": mid, "problem": problem.key, "substrate_hash": "h", "rule": f"r{mid}",
                                    "family": family, "status": "distinct", "name": f"kernel.cu:1:1 r{mid}"})
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    store.record_cells(run, [{"mutant": "E", "input": i, "outcome": "pass",
                              "margin": 4e-4 if label.startswith("official") else 1e-6} for label, i in ids.items()])


def test_survivors_are_split_by_what_their_cells_show(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seeded(store, demo)
    found = unwitnessed(store, load_matrices(store), [KB, KBV])
    kinds = {f: dict(r.kinds) for f, r in found.items()}
    # A, B and C are witnessed; D gives the correct kernel's margin on every valid input (hidden x3,
    # where the correct kernel is 2e-3 off, is no valid input of kbv at 1e-3, and D's 1e-6 there
    # would otherwise make it "changed"); E changed the output under every tolerance; F never ran
    assert kinds == {"arithmetic": {}, "indexing": {CHANGED: 1}, "semantic": {}, "boundary": {SAME: 1},
                     "synchronization": {NOT_RUN: 1}, "precision": {}}
    assert [r.distinct for r in found.values()] == [1, 1, 1, 1, 1, 1]
    assert (dict(found["boundary"].rules), dict(found["arithmetic"].rules)) == ({"rD": 1}, {})
    example = found["indexing"].examples[CHANGED][0]
    assert (example["id"], example["margin"]) == ("E", 4e-4)


def test_a_tighter_protocol_in_the_set_witnesses_what_it_kills(demo: ProblemSet) -> None:
    store = Store(":memory:")
    seeded(store, demo)
    found = unwitnessed(store, load_matrices(store), [KB, KBV, load_protocol("kernelbench-head")])
    assert dict(found["indexing"].kinds) == {}  # E's 4e-4 on the official inputs is over head's 1e-4


def test_the_report_prints_the_section_with_examples(demo: ProblemSet, tmp_path) -> None:
    store = Store(tmp_path / "s.db")
    seeded(store, demo)
    store.close()
    out = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "report", "--tables",
                                   "--denominator", "kernelbench", "--denominator", "kbv"])
    assert out.exit_code == 0, out.output
    text = out.output
    assert "What no input witnesses: distinct mutants that no valid input of kbv, kernelbench kills" in text
    assert "| all | 6 | 3 (50.0%) | 1 | 1 | 1 |  |" in text
    # each family's rules with the most unwitnessed mutants, of their distinct ones
    assert "| indexing | 1 | 1 (100.0%) | 0 | 1 | 0 | rE 1 of 1 |" in text
    assert "- indexing, changed, within tolerance: `E` kernel.cu:1:1 rE, largest margin 4.00e-04" in text
