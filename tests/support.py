"""What several test modules build their cases from: paths, small stores, screening rules.

Test modules import from here, never from each other (a test module is not a library).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from kbm_toolkit.mutation.campaign import mutate_problems
from kbm_toolkit.mutation.rules import _parse
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.store import Store

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
KERNELBENCH = Path(os.environ.get("KBM_KERNELBENCH", REPO / "third_party" / "KernelBench"))
KB, KBV = load_protocol("kernelbench"), load_protocol("kbv")


def load_script(relative: str) -> ModuleType:
    """A repository script (`scripts/...`, `bench/...`) imported as a module, for its functions."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rule(name: str, pattern: str, replacement: str, **extra):
    return _parse({"name": name, "family": extra.pop("family", "arithmetic"), "description": name,
                   "pattern": pattern, "replacement": replacement, **extra}, Path("test.toml"), 0)


SCREENING_RULES = [
    rule("breaks-compile", r"\bout\[i\]", "outt[i]"),                    # undefined name
    rule("commutes", r"v > 0\.0f", "0.0f < v"),                           # same machine code
    rule("slope-div", r"v \* negative_slope", "v / negative_slope"),      # a real change
    rule("slope-div-again", r"(\?\s*v\s*:\s*)v \* (negative_slope)", r"\1v / \2"),  # the same change
]


def seed(store: Store, problem) -> dict[str, str]:
    """Mutants A..D on one problem, the official and hidden inputs, their checks and cells.

    A: killed by an official input at margin 0.5   -> both protocols detect it
    B: margin 5e-3 on the official inputs          -> only the 1e-3 tolerance sees it
    C: killed only by the hidden x-1 input         -> only KBV's inputs reach it
    D: never killed                                 -> unwitnessed, outside every denominator
    hidden x3: the correct kernel's margin is 2e-3 -> a KBV false rejection
    hidden x0.01: the reference is non-finite      -> dropped by KBV
    """
    store.record_problem(problem)
    for mid, family in (("A", "arithmetic"), ("B", "precision"), ("C", "semantic"), ("D", "boundary")):
        store.db["mutants"].insert({"id": mid, "problem": problem.key, "substrate_hash": "h", "rule": f"r{mid}",
                                    "family": family, "status": "distinct", "name": mid})
    specs = {s.label: s for s in KBV.specs(problem)}
    store.record_inputs(list(specs.values()), "kbv")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for label, spec in specs.items():
        check = {"input": spec.id, "valid": True, "outcome": "pass", "margin": 1e-6, "max_abs": 1e-6}
        if label == "hidden x3":
            check.update(valid=True, margin=2e-3)
        if label == "hidden x0.01":
            check = {"input": spec.id, "valid": False, "note": "reference is non-finite on this input"}
        store.record_input_check("h", run, check)
    cells = []
    for label, spec in specs.items():
        official = label.startswith("official")
        margins = {"A": 0.5 if official else 1e-6, "B": 5e-3 if official else 1e-6,
                   "C": 0.5 if label == "hidden x-1" else 1e-6, "D": 1e-6}
        cells += [{"mutant": m, "input": spec.id, "outcome": "pass", "margin": v} for m, v in margins.items()]
    store.record_cells(run, cells)
    return {label: spec.id for label, spec in specs.items()}


def build(path: Path, demo: ProblemSet) -> tuple[Store, dict[str, str]]:
    """demo/1's screening mutants: slope-div killed by an official input, one distinct mutant left
    unevaluated, plus the compile error, the equivalent and the duplicate."""
    problem = demo.get("demo/1")
    store = Store(path)
    mutate_problems(store, [problem], "sm_90", workers=1, require_gate=False, rules=SCREENING_RULES)
    rows = list(store.mutants(problem.key))
    ids = {r["rule"]: r["id"] for r in rows}
    specs = KB.specs(problem)
    store.record_inputs(specs, "kernelbench")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for s in specs:
        store.record_input_check(rows[0]["substrate_hash"], run,
                                 {"input": s.id, "valid": True, "outcome": "pass", "margin": 1e-6, "max_abs": 1e-6})
    store.record_cells(run, [{"mutant": ids["slope-div"], "input": s.id, "outcome": "pass",
                              "margin": 0.5 if i == 0 else 1e-7} for i, s in enumerate(specs)])
    return store, ids
