"""Issue 29's open question on races: does memory stress beside the launch (`KBM_STRESS=memory`,
`kbm_toolkit/cuda/stress.py`) witness synchronization mutants that no input does?

    python dev/race_stress.py specs STORE --sample 0.4 --out specs.jsonl   # prints the problems
    python dev/race_stress.py narrow COPY.db synchronization semantic      # a copy, never the store
    python dev/race_stress.py compare PLAIN.db STRESSED.db specs.jsonl

`specs`: the problems where the official check lets a synchronization mutant of the share through,
and for each, official draws under seeds no protocol uses (new input ids, so both copies of the
store run them fresh). `narrow` quarantines, in a copy, every distinct mutant of other families,
so a run there takes only those (semantic ones are the control: no race, so stress should move
no margin). `dev/h200_batch.sh race-stress` runs the inputs on those problems' survivors in two
narrowed copies of the store, one under stress, then `compare`s: per family, the mutants each
copy kills at 1e-2 and those only one of them does, each copy's cells by outcome, and the
synchronization ones only stress kills.
Leaves main once the question is answered.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEEDS = (7001, 7002)
"""Seeds of official draws no built-in protocol uses."""
TOLERANCE = 1e-2


def specs(store_path: str, sample: float, out: Path) -> list[str]:
    """Write the spec records; the problems with a synchronization survivor of the official check."""
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol
    from kbm_toolkit.problems.input_spec import InputSpec
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.store.shipped import open_store

    matrices = load_matrices(open_store(store_path), TOLERANCE, sample=sample)
    found = run_protocol(load_protocol("kernelbench"), matrices)
    problems = []
    with out.open("w") as f:
        for mx in matrices:
            left = set(mx.mutants) - found.detected.get(mx.problem.key, set())
            if any(mx.mutants[m].get("family") == "synchronization" for m in left):
                problems.append(mx.problem.key)
                for seed in SEEDS:
                    spec = InputSpec.make(mx.problem.key, seed, label=f"official draw, seed {seed}")
                    f.write(json.dumps({**spec.record(), "label": spec.label}) + "\n")
    return problems


def narrow(copy: str, families: list[str]) -> int:
    """Quarantine the distinct mutants of other families in `copy` (a run then skips them); how many."""
    con = sqlite3.connect(copy)
    marks = ",".join("?" * len(families))
    n = con.execute(f"update mutants set status = 'quarantined' where status = 'distinct' "
                    f"and family not in ({marks})", families).rowcount
    con.commit()
    return n


def kills(db: str, inputs: set[str]) -> tuple[dict[str, tuple[str, bool, float]], Counter]:
    """Per mutant that ran on `inputs`: its family, whether a cell kills it at 1e-2, its largest
    margin; and the cells' outcomes (a harness that breaks launches shows as crashes or timeouts)."""
    from kbm_toolkit.analysis.matrix import killed

    con = sqlite3.connect(db)
    out: dict[str, tuple[str, bool, float]] = {}
    outcomes: Counter = Counter()
    rows = con.execute("select c.mutant, m.family, c.input, c.outcome, c.margin from cells c "
                       "join mutants m on m.id = c.mutant")
    for mutant, family, spec, outcome, margin in rows:
        if spec not in inputs:
            continue
        outcomes[outcome] += 1
        fam, dead, worst = out.get(mutant, (family, False, 0.0))
        out[mutant] = (fam, dead or killed((outcome, margin), TOLERANCE), max(worst, margin or 0.0))
    return out, outcomes


def compare(plain: str, stressed: str, spec_file: Path) -> str:
    """The table: per family, mutants run in both, killed in each, killed in one only."""
    from kbm_toolkit.problems.input_spec import InputSpec

    records = [json.loads(line) for line in spec_file.read_text().splitlines() if line]
    inputs = {InputSpec.from_record({k: v for k, v in r.items() if k != "label"}).id for r in records}
    (a, plain_outcomes), (b, stressed_outcomes) = kills(plain, inputs), kills(stressed, inputs)
    both = sorted(set(a) & set(b))
    table: dict[str, Counter] = {}
    only_stress = []
    for m in both:
        fam = a[m][0]
        c = table.setdefault(fam, Counter())
        c["mutants"] += 1
        c["plain"] += a[m][1]
        c["stressed"] += b[m][1]
        c["stressed only"] += b[m][1] and not a[m][1]
        c["plain only"] += a[m][1] and not b[m][1]
        c["margin moved"] += abs(a[m][2] - b[m][2]) > 1e-6 * max(a[m][2], b[m][2], 1e-30)
        if b[m][1] and not a[m][1] and fam == "synchronization":
            only_stress.append(f"{m} (margin {a[m][2]:.2e} -> {b[m][2]:.2e})")
    keys = ("mutants", "plain", "stressed", "stressed only", "plain only", "margin moved")
    lines = ["family".ljust(16) + "".join(k.rjust(15) for k in keys)]
    for fam in sorted(table):
        lines.append(fam.ljust(16) + "".join(str(table[fam][k]).rjust(15) for k in keys))
    for name, outcomes in (("plain", plain_outcomes), ("stressed", stressed_outcomes)):
        lines.append(f"cells, {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    lines.append(f"synchronization mutants killed only under stress: {', '.join(only_stress) or 'none'}")
    lines.append(f"(mutants run in one copy only: {len(set(a) ^ set(b))}; kills at {TOLERANCE:g}, over "
                 f"{len(inputs)} inputs)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("specs")
    s.add_argument("store")
    s.add_argument("--sample", type=float, default=None)
    s.add_argument("--out", type=Path, required=True)
    n = sub.add_parser("narrow")
    n.add_argument("copy")
    n.add_argument("families", nargs="+")
    c = sub.add_parser("compare")
    c.add_argument("plain")
    c.add_argument("stressed")
    c.add_argument("specs", type=Path)
    args = ap.parse_args()
    if args.what == "specs":
        print(" ".join(specs(args.store, args.sample, args.out)))
    elif args.what == "narrow":
        print(f"{narrow(args.copy, args.families)} distinct mutants of other families quarantined in {args.copy}")
    else:
        print(compare(args.plain, args.stressed, args.specs))


if __name__ == "__main__":
    main()
