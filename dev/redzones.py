"""Issue 29's equivalence candidates, looked at once more: of the distinct mutants no input witnesses
and whose margin equals the correct kernel's on every input, how many write outside their
buffers (`KBM_REDZONES=1`, `kbm_toolkit/cuda/redzone.py`)?

    python dev/redzones.py narrow COPY.db --sample 0.1 --witness DIR_OR_NAME ... --rerun DIR_OR_NAME ...
    python dev/redzones.py compare COPY.db

`narrow` (a copy, never the store): finds the candidates of the share over the `--witness`
protocols, quarantines every other distinct mutant, deletes the candidates' cells on the inputs
of the `--rerun` protocols, and prints their problems; `kbm run` of those problems with
`--inputs` the `--rerun` protocols and `KBM_REDZONES=1` measures them again, each cell's note
saying where its launch wrote into a redzone (`dev/h200_batch.sh redzones`). `compare` tabulates,
per family and rule: candidates, those run again, those that wrote into a redzone on some input,
and those the padding made fail (a stray write that used to land harmlessly now lands elsewhere,
or the other way round). Leaves main once the question is answered.
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

NOTE = "(KBM_REDZONES)"
CANDIDATES = "redzone_candidates"
"""The table `narrow` leaves in the copy: the candidates and their problems."""


def narrow(copy: str, sample: float, witness: list[str], rerun: list[str]) -> list[str]:
    """Keep only the candidates in `copy`, without their cells on the `rerun` protocols' inputs;
    their problems."""
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.unwitnessed import SAME, remainder
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.store.shipped import open_store

    store = open_store(copy)
    matrices = load_matrices(store, sample=sample)
    left = remainder(store, matrices, [load_protocol(w) for w in witness])
    found = {m: (key, row) for m, (key, row, kind, _) in left.items() if kind == SAME}
    problems = {mx.problem.key: mx.problem for mx in matrices}
    inputs = {key: [s.id for p in rerun for s in load_protocol(p).specs(problems[key])]
              for key in {key for key, _ in found.values()}}
    con = sqlite3.connect(copy)
    con.execute(f"create table {CANDIDATES} (mutant text primary key, problem text, family text, rule text)")
    con.executemany(f"insert into {CANDIDATES} values (?, ?, ?, ?)",
                    [(m, key, row["family"], row["rule"]) for m, (key, row) in found.items()])
    con.execute(f"update mutants set status = 'quarantined' where status = 'distinct' "
                f"and id not in (select mutant from {CANDIDATES})")
    for m, (key, _) in found.items():
        marks = ",".join("?" * len(inputs[key]))
        con.execute(f"delete from cells where mutant = ? and input in ({marks})", [m, *inputs[key]])
    con.commit()
    return sorted(inputs)


def compare(copy: str) -> str:
    """The table: per family (and its rules most written outside), the candidates, those run
    again, those whose launch wrote into a redzone on some input, and those that now fail."""
    con = sqlite3.connect(copy)
    runs = [r for (r, env) in con.execute("select id, environment from runs where kind = 'evaluate'")
            if json.loads(env or "{}").get("redzones")]
    marks = ",".join("?" * len(runs))
    rows = con.execute(f"select c.mutant, c.outcome, c.note from cells c where c.run in ({marks})", runs) if runs else []
    ran: dict[str, tuple[bool, bool]] = {}
    for mutant, outcome, note in rows:
        wrote, failed = ran.get(mutant, (False, False))
        ran[mutant] = (wrote or NOTE in (note or ""), failed or outcome != "pass")
    table: dict[str, Counter] = {}
    rules: dict[str, Counter] = {}
    for mutant, family, rule in con.execute(f"select mutant, family, rule from {CANDIDATES}"):
        c = table.setdefault(family, Counter())
        c["candidates"] += 1
        if mutant in ran:
            c["run again"] += 1
            c["wrote outside"] += ran[mutant][0]
            c["now fail"] += ran[mutant][1]
            rules.setdefault(family, Counter())[rule] += ran[mutant][0]
    keys = ("candidates", "run again", "wrote outside", "now fail")
    lines = ["family".ljust(16) + "".join(k.rjust(15) for k in keys) + "  rules most written outside"]
    for family in sorted(table):
        top = ", ".join(f"{r} {n}" for r, n in rules.get(family, Counter()).most_common(3) if n)
        lines.append(family.ljust(16) + "".join(str(table[family][k]).rjust(15) for k in keys) + f"  {top}")
    lines.append(f"(cells of runs {', '.join(map(str, runs)) or 'none'} with redzones)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    n = sub.add_parser("narrow")
    n.add_argument("copy")
    n.add_argument("--sample", type=float, default=None)
    n.add_argument("--witness", action="append", required=True)
    n.add_argument("--rerun", action="append", required=True)
    c = sub.add_parser("compare")
    c.add_argument("copy")
    args = ap.parse_args()
    if args.what == "narrow":
        print(" ".join(narrow(args.copy, args.sample, args.witness, args.rerun)))
    else:
        print(compare(args.copy))


if __name__ == "__main__":
    main()
