"""The pool as lists: problems with their gate verdicts, mutants by filter, one mutant in full."""

from __future__ import annotations

from typing import Any, Iterator

from kbm_toolkit.errors import OptionError, ProblemError
from kbm_toolkit.problems.problem import problem_from_row
from kbm_toolkit.problems.problem_set import ProblemSet, in_level, resolve_problem
from kbm_toolkit.problems.substrate import has_substrate
from kbm_toolkit.vocabulary import FAMILIES, MutantStatus

LEGACY_STATUS = {"crash_probe": MutantStatus.QUARANTINED.value}
"""Status words older kbm printed, still understood by filters."""


def problem_listing(problem_set: ProblemSet, store: Any, level: str | None = None) -> list[dict[str, Any]]:
    """Every problem here (of `level`), whether it has a substrate and its gate verdict in `store`; then
    the problems the store gated whose files are not here (the shipped pool without a checkout)."""
    gates = {r["problem"]: r for r in store.substrates()}
    here = problem_set.select(level=level)
    rows = [{"problem": p.key, "pack": p.origin, "substrate": has_substrate(p), "here": True,
             "status": (gates.get(p.key) or {}).get("gate_status") or ("not gated" if has_substrate(p) else "no substrate")}
            for p in here]
    listed = {p.key for p in here}
    stored = store.problem_rows()
    rows += [{"problem": k, "pack": _pack_of_row(stored.get(k)), "substrate": True, "here": False,
              "status": g["gate_status"] or "not gated"}
             for k, g in gates.items() if k not in listed and in_level(k.rpartition("/")[0], level)]
    return rows


def _pack_of_row(row: dict[str, Any] | None) -> str:
    """The pack a stored problem came from (stores written before packs call kbm's own set `builtin`)."""
    origin = (row or {}).get("origin") or ""
    return "demo" if origin == "builtin" else origin


def stored_problem(problem_set: ProblemSet, store: Any, ref: str) -> str:
    """The key of the problem `ref` names: among the problems here, else among those the store holds
    (a shipped KernelBench pool is browsable without the checkout)."""
    try:
        return problem_set.get(ref).key
    except ProblemError:
        stored = {k: problem_from_row(k, r) for k, r in store.problem_rows().items()}
        if not stored:
            raise
        return resolve_problem(stored, ref, f"the problems here and those in {store.where}").key


def mutant_listing(store: Any, problem: str | None = None, rule: str | None = None, family: str | None = None,
                   status: str | None = None) -> Iterator[dict[str, Any]]:
    """The stored mutants matching every filter; an unknown rule, family or status is refused at once
    (OptionError, a usage error), not an empty list."""
    if family is not None and family not in FAMILIES:
        raise OptionError(f"no family {family!r} (families: {', '.join(FAMILIES)})")
    if rule is not None:
        rules = store.rules()
        if rule not in rules:
            raise OptionError(f"no rule {rule!r} among the store's {len(rules)} rules (see `kbm rules`)")
    status = LEGACY_STATUS.get(status or "", status)
    if status is not None and status not in MutantStatus.values():
        raise OptionError(f"no mutant status {status!r} (statuses: {', '.join(MutantStatus.values())})")
    return store.mutants(problem, rule, family, status)


def mutant_record(store: Any, mutant_id: str) -> dict[str, Any]:
    """One mutant: its row, its rule's row, its diff, and its shape verdicts (`kbm show`)."""
    row = store.mutant(mutant_id)
    return {**row, "rule_row": store.rules().get(row["rule"]) or {"description": ""},
            "shapes": store.shape_verdicts([row["id"]]).get(row["id"], {})}
