"""`kbm mutate` as a library call: gated substrates → mutants → screening → the store."""

from __future__ import annotations

from typing import Any

from kbm_toolkit.mutation.mutants import generate
from kbm_toolkit.mutation.positions import launch_sequence, place
from kbm_toolkit.mutation.rules import RuleError, load_rules
from kbm_toolkit.mutation.screening import screen
from kbm_toolkit.mutation.summary import MutationSummary
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import has_substrate, substrate_for
from kbm_toolkit.store import Store, shipped_store_path
from kbm_toolkit.vocabulary import GateStatus

def gated_sources(store: Any) -> dict[str, str]:
    """problem → kernel source hash of every substrate whose gate passed (user store, else embedded)."""
    found = {r["problem"]: r["source_hash"] for r in store.substrates() if r["gate_status"] == GateStatus.PASSED}
    if shipped_store_path().is_file():
        shipped = Store(shipped_store_path(), readonly=True)
        for r in shipped.substrates():
            if r["gate_status"] == GateStatus.PASSED:
                found.setdefault(r["problem"], r["source_hash"])
    return found


def mutate_problems(store: Any, problems: list[Problem], arch: str, rule_names: tuple[str, ...] | None = None,
                    workers: int | None = None, require_gate: bool = True, progress: Any = None,
                    rules: list[Any] | None = None, placed: bool = True) -> MutationSummary:
    """Generate, screen and store the mutants of every selected problem that may be mutated
    (under `rules` when given, else the catalog's, narrowed to `rule_names`). A network's kernel
    mutants are placed at one launch each (`mutation.positions`); with `placed=False` each runs at
    every launch of its kernel, as a fault in a fused generated kernel would."""
    rules = load_rules() if rules is None else rules
    if rule_names:
        unknown = sorted(set(rule_names) - {r.name for r in rules})
        if unknown:
            raise RuleError(f"no rule named {unknown[0]!r} (see `kbm rules`)")
        rules = [r for r in rules if r.name in rule_names]
    store.record_rules(rules)
    summary = MutationSummary(rule_family={r.name: r.family for r in rules})
    gated = gated_sources(store) if require_gate else {}
    for problem in problems:
        if not has_substrate(problem):
            summary.skipped[problem.key] = "no substrate"
            continue
        substrate = substrate_for(problem)
        if require_gate and gated.get(problem.key) != substrate.source_hash:
            summary.skipped[problem.key] = "not gated at this source (run `kbm gate`, or pass --ungated)"
            continue
        if substrate.positioned and not placed and any(r["launch"] for r in store.mutants(problem.key)):
            # mutating replaces a problem's mutants: the placed ones' cells would lose their mutants
            summary.skipped[problem.key] = ("the store holds its placed mutants; mutate --unplaced into a store "
                                            "of its own (e.g. a copy of the gate's)")
            continue
        mutants = generate(substrate, rules)
        task = progress.add_task(problem.key, total=len(mutants)) if progress else None
        screened = screen(mutants, substrate.source, substrate.launcher_source, arch, workers,
                          on_progress=(lambda n: progress.advance(task, n)) if progress else None)
        if substrate.positioned and placed:
            screened = place(screened, launch_sequence(problem, substrate), substrate.source, arch)
        diffs = _diffs(screened, substrate)
        if progress:
            progress.update(task, completed=len(mutants))
        store.record_problem(problem)
        store.record_mutants(problem.key, screened, diffs, arch)
        summary.problems.append(problem.key)
        summary.add(screened)
    return summary


def _diffs(screened: list[Any], substrate: Any) -> dict[str, str]:
    """Each mutant's diff against the substrate, computed once per mutated file: a site's placed
    mutants (`mutation.positions`) share it, and a network's kernel.cu is long."""
    by_text: dict[tuple[str, str], str] = {}
    diffs = {}
    for s in screened:
        m = s.mutant
        key = (m.target, m.kernel_source if m.target == "kernel" else m.launcher_source)
        if key not in by_text:
            by_text[key] = m.diff(substrate)
        diffs[m.id] = by_text[key]
    return diffs
