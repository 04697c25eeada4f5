"""What `kbm run --first-kill` saves, replayed on a store with full rows: no GPU.

Copies the store, deletes every cell the first-kill rule would not have asked for (in the order
`kbm run --inputs P1,P2,...` runs them), then audits each protocol on both stores, with the gain
decomposition against the first one. Prints the share of cells kept and each audit side by side;
exits 1 if any audit figure differs.

    python bench/first_kill_replay.py --store .kbm/kb.db --sample 0.1 --inputs kernelbench,kbv,fuzz
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbm_toolkit.evaluation.first_kill import FirstKill, Settled  # noqa: E402
from kbm_toolkit.protocols.registry import all_protocols, load_protocol  # noqa: E402
from kbm_toolkit.analysis.matrix import load_matrices  # noqa: E402
from kbm_toolkit.analysis.score import audit_store  # noqa: E402
from kbm_toolkit.evaluation.input_sources import resolve  # noqa: E402
from kbm_toolkit.store import Store, copy_store  # noqa: E402

FIGURES = ("witnessed", "detected")


def skipped_cells(store: Store, protocols: list, source: str, sample: float | None) -> tuple[list[tuple[str, str]], int]:
    """The (mutant, input) cells first-kill would not have run, and how many cells there were."""
    specs_for = resolve(source)
    skipped, total = [], 0
    for mx in load_matrices(store, full_rows=True, sample=sample):
        settled = Settled(FirstKill.of(protocols, mx.problem),
                          {i: c["margin"] for i, c in mx.checks.items() if c["valid"]})
        for m in mx.mutants:
            for spec in specs_for(mx.problem):
                cell = mx.cells.get((m, spec.id))
                if cell is None:
                    continue
                total += 1
                if not settled.needed(m, spec.id):
                    skipped.append((m, spec.id))
                else:
                    settled.cell(m, spec.id, *cell)
    return skipped, total


def summary(report: dict) -> tuple:
    vs = report.get("vs") or {}
    return (*(report[k] for k in FIGURES), round(vs.get("inputs_points", 0.0), 6),
            round(vs.get("tolerance_points", 0.0), 6), sum(report["missing"]["cells"].values()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--inputs", default="kernelbench,kbv,fuzz", help="The protocols of the run, in its order.")
    ap.add_argument("--sample", type=float, help="Replay on at most this share (the share with full rows).")
    args = ap.parse_args()
    protocols = [load_protocol(p) for p in args.inputs.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "replay.db"
        copy_store(args.store, copy)
        replay = Store(copy)
        skipped, total = skipped_cells(replay, protocols, args.inputs, args.sample)
        with replay.db.conn:
            replay.db.conn.executemany("delete from cells where mutant = ? and input = ?", skipped)
        print(f"first-kill keeps {total - len(skipped):,} of {total:,} cells ({1 - len(skipped) / total:.1%})")
        print("protocol: (witnessed, detected, inputs points, tolerance points, missing cells) full -> first-kill")
        denominator, same = all_protocols(), True
        for p in protocols:
            full, first = (summary(audit_store(Store(path, readonly=True), p, denominator, vs=protocols[0],
                                                   sample=args.sample))
                           for path in (args.store, copy))
            same &= full == first
            print(f"  {p.name}: {full} -> {first}")
    print("every audit is the same" if same else "AUDITS DIFFER")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
