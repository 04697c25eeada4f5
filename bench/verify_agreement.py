"""Does `kbm verify` say what the kill matrix says? kbm's own mutants, exported as KernelBench
submissions, judged by `kbm verify` under each protocol, against the store's verdicts on them.

Per protocol and problem, a hash-drawn few of the mutants whose verdict the store decides (as
`bench/conformance.py` draws them: every input of the protocol checked and valid, none timing out)
and the correct substrate are exported (`kbm export --format kernelbench`), judged by
`verify_submissions` into a scratch store, and compared: the protocol rejects the submission iff
the store shows the mutant detected. Each input is compared too: the protocol's input fails iff
the stored cell kills at its tolerance. Needs a CUDA GPU and a KernelBench checkout.

    python bench/verify_agreement.py --kernelbench PATH [--kbv PATH] [--store @kernelbench]
        [--problems P ...] [--per-problem 16] [--protocols NAME ...] [--workers 4] [--out DIR]

The last lines are a table: protocol, submissions, problems, agree, disagree, agreement, and the
same per input; every disagreement is listed above it with both sides' margins.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbm_toolkit.analysis.matrix import load_matrices  # noqa: E402
from kbm_toolkit.analysis.submissions import submission_verdicts  # noqa: E402
from kbm_toolkit.conformance.corpus import export_corpus  # noqa: E402
from kbm_toolkit.conformance.selection import DEFAULT_PROBLEMS, select  # noqa: E402
from kbm_toolkit.problems.problem_set import ProblemSet  # noqa: E402
from kbm_toolkit.problems.submission import find_submissions  # noqa: E402
from kbm_toolkit.protocols.registry import load_protocol  # noqa: E402
from kbm_toolkit.vocabulary import Verdict  # noqa: E402

PROTOCOLS = ("kernelbench", "kernelbench-head", "kbv", "kbv-reconstructed", "fuzz")
"""The built-in protocols the shipped store has cells for (fuzz-shapes has none: issue 29's search)."""


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout (its problem files)")
    ap.add_argument("--kbv", type=Path, help="a KernelBench-Verified checkout (kbv's published hidden tests)")
    ap.add_argument("--store", default="@kernelbench", help="the store whose verdicts are compared")
    ap.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS))
    ap.add_argument("--per-problem", type=int, default=16, help="mutants drawn per problem and protocol")
    ap.add_argument("--protocols", nargs="+", default=list(PROTOCOLS))
    ap.add_argument("--workers", type=int, default=4, help="kbm verify's worker processes on the GPU")
    ap.add_argument("--out", type=Path, default=Path("verify-agreement"), help="corpus, scratch store, results")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    if args.kbv:
        os.environ["KBM_KBV"] = str(args.kbv.expanduser().resolve())
    from kbm_toolkit.evaluation.device import describe_device
    from kbm_toolkit.evaluation.verify import VerifyOptions, verify_submissions
    from kbm_toolkit.store import Store
    from kbm_toolkit.store.shipped import open_store

    env = describe_device()
    if not env.get("cuda"):
        sys.exit("Error: no CUDA device is visible: kbm verify runs submissions on a GPU")
    store = open_store(args.store)
    problem_set = ProblemSet.discover(args.kernelbench)
    problems = [problem_set.get(p) for p in args.problems]
    keys = {p.key for p in problems}
    matrices = {mx.problem.key: mx for mx in load_matrices(store) if mx.problem.key in keys}
    protocols = [load_protocol(name) for name in args.protocols]
    selections = {p.name: select(store, matrices, p, problems, args.per_problem, control=True,
                                 reference=p.judge.reference) for p in protocols}
    for name, selection in selections.items():
        for key, why in selection.skipped.items():
            print(f"{name}: {key} left out: {why}", file=sys.stderr)
    wanted = {c.mutant for s in selections.values() for c in s.candidates if c.mutant}
    corpus = export_corpus(store, [p for p in problems if any(c.problem == p.key for s in selections.values()
                                                               for c in s.candidates)],
                           args.out / "corpus", mutants=wanted, control=True)
    by_mutant = {(e.problem, e.mutant): args.out / "corpus" / e.file for e in corpus.written}
    found = find_submissions([args.out / "corpus"], problem_set)
    scratch = Store(args.out / "verify.db")
    began = time.monotonic()
    summary = verify_submissions(scratch, found, protocols, env, VerifyOptions(workers=args.workers))
    wall = time.monotonic() - began
    verdicts = {v.submission["path"]: v for v in submission_verdicts(scratch, protocols, [s.id for s in found],
                                                                     problem_set.problems())}
    rows, lines = [], []
    for p in protocols:
        for c in selections[p.name].candidates:
            v = verdicts[str(by_mutant[(c.problem, c.mutant)])]
            pv = next(x for x in v.protocols if x.protocol == p.name)
            rejects = pv.verdict == Verdict.REJECTS
            inputs = {r.input: r for r in pv.inputs}
            cells = [(cell, inputs.get(cell["input"])) for cell in c.cells]
            # where both sides ran: first-kill leaves gaps in the store, and verify stops after a crash
            stored = [(cell, r) for cell, r in cells if cell["outcome"] is not None and r is not None
                      and r.outcome is not None]
            cell_agree = sum(r is not None and r.passed is not None and (r.passed is False) == cell["kills"]
                             for cell, r in stored)
            row = {"protocol": p.name, "problem": c.problem, "mutant": c.mutant, "kbm_detected": c.detected,
                   "verify": pv.verdict, "agree": rejects == c.detected, "inputs": len(stored),
                   "inputs_agree": cell_agree}
            rows.append(row)
            if not row["agree"] or cell_agree < len(stored):
                lines.append(f"{p.name} {c.problem} {c.mutant or 'control'}: store {'detected' if c.detected else 'survives'}, "
                             f"verify {pv.verdict}; {c.name}")
                for cell, r in cells:
                    lines.append(f"    {cell['label']:<28} store {cell['outcome']}:{cell['margin']}"
                                 f"{' kills' if cell['kills'] else ''}  verify {r.words if r else '-'}:"
                                 f"{r.margin if r else '-'} {(r.note or '') if r else ''}")
    (args.out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print("\n".join(lines) or "no disagreements")
    print(f"\nkbm verify: {len(found)} submissions of {len({s.problem.key for s in found})} problems, "
          f"{summary.cells} cells in {wall:.0f} s ({summary.restarts} worker restarts); problems: "
          + ", ".join(sorted({v for v in summary.problems.values()})))
    head = f"{'protocol':<18} {'n':>5} {'problems':>8} {'agree':>6} {'disagree':>8} {'agreement':>10} {'inputs agree':>14}"
    print(head + "\n" + "-" * len(head))
    for p in protocols:
        mine = [r for r in rows if r["protocol"] == p.name and r["mutant"]]
        controls = [r for r in rows if r["protocol"] == p.name and not r["mutant"]]
        agree = sum(r["agree"] for r in mine)
        inputs, inputs_agree = sum(r["inputs"] for r in mine), sum(r["inputs_agree"] for r in mine)
        pct = f"{100 * agree / len(mine):.1f}%" if mine else "-"
        print(f"{p.name:<18} {len(mine):>5} {len({r['problem'] for r in mine}):>8} {agree:>6} {len(mine) - agree:>8} "
              f"{pct:>10} {inputs_agree:>7}/{inputs:<6}   controls accepted {sum(r['verify'] == Verdict.ACCEPTS for r in controls)}"
              f"/{len(controls)}")
    mutants = {(r["problem"], r["mutant"]) for r in rows if r["mutant"]}
    print(f"{len(mutants)} distinct mutants over {len({m[0] for m in mutants})} problems")


if __name__ == "__main__":
    main()
