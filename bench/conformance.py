"""Conformance with the real checkers: kbm's stored verdicts against KernelBench's and
KernelBench-Verified's own evals on the same mutants.

Each mutant is wrapped as a KernelBench `ModelNew` submission (`kbm_toolkit.conformance.model_new`)
and judged by `eval_kernel_against_ref` imported from your checkouts: KernelBench's at its own fp32
tolerance (1e-4 on main: kbm's `kernelbench-head`) and at v0.1's 1e-2 (kbm's `kernelbench`),
KernelBench-Verified's with its hidden tests (kbm's `kbv` and `kbv-reconstructed`). With `--suite
DIR` (a folder `kbm suite --format kbv` wrote), KernelBench-Verified's eval also runs that suite's
hidden tests alone, laid over a copy of its checkout, at the suite's tolerance; kbm's verdict is
then `kbm audit --adapter DIR`'s. A checker that rejects the submission agrees with kbm when the
store shows the mutant detected. Needs a CUDA GPU.

    python bench/conformance.py --kernelbench PATH [--kbv PATH] [--store @kernelbench]
        [--per-problem N] [--problems P ...] [--protocols NAME ...] [--suite DIR] [--workers 8]
        [--timeout S] [--budget S] [--reference strict-fp32|pytorch-default] [--out FILE.jsonl]

Results stream to FILE.jsonl, one row per (protocol, problem, mutant), and a run given the same
file resumes where it stopped; the workers' logs go to FILE.jsonl.logs/. `--summary` only reads
the file and prints the tables. The last lines are a table: checker, protocol, n, problems,
agree, disagree, agreement %.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbm_toolkit.conformance.harness import (PAIRINGS, disagreement_table, read_results, run_conformance,  # noqa: E402
                                             summarize, summary_json, summary_table)
from kbm_toolkit.conformance.selection import DEFAULT_PROBLEMS  # noqa: E402
from kbm_toolkit.conformance.workers import TIMEOUT_S  # noqa: E402
from kbm_toolkit.judging import PYTORCH_DEFAULT, STRICT  # noqa: E402


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, help="a KernelBench checkout (its eval and problem files)")
    ap.add_argument("--kbv", type=Path, help="a KernelBench-Verified checkout (its eval and hidden tests)")
    ap.add_argument("--store", default="@kernelbench", help="the store whose verdicts are compared (default: @kernelbench)")
    ap.add_argument("--per-problem", type=int, default=25, help="mutants drawn per problem (default: 25)")
    ap.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS), help="problems (default: 13 small ones)")
    ap.add_argument("--protocols", nargs="*", default=list(PAIRINGS), choices=list(PAIRINGS),
                    help="kbm protocols to compare (kbv ones need --kbv; default: all; none: only --suite)")
    ap.add_argument("--suite", type=Path, help="a suite `kbm suite --format kbv` wrote, run by KBV's eval (needs --kbv)")
    ap.add_argument("--workers", type=int, default=8, help="worker processes on the GPU (default: 8)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help=f"seconds per submission (default: {TIMEOUT_S:g})")
    ap.add_argument("--budget", type=float, help="start no submission after this many seconds (run again to resume)")
    ap.add_argument("--reference", choices=[STRICT, PYTORCH_DEFAULT], default=STRICT,
                    help="the evals' reference: TF32 off as kbm's stored margins (default), or PyTorch's "
                         "default (TF32 cuDNN convolutions; needs a store with margins against it)")
    ap.add_argument("--out", type=Path, default=Path("conformance.jsonl"), help="results (default: conformance.jsonl)")
    ap.add_argument("--summary", action="store_true", help="only summarise --out")
    ap.add_argument("--json", type=Path, help="also write the summary as JSON here")
    args = ap.parse_args(argv)
    if not args.summary and args.kernelbench is None:
        ap.error("--kernelbench PATH is required (a KernelBench checkout)")
    if args.suite and not args.kbv:
        ap.error("--suite runs on KernelBench-Verified's eval: give --kbv PATH")
    return args


def _gpu_visible() -> bool:
    """Whether a CUDA device is visible, asked of a child process so that this one never imports torch."""
    probe = "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    if not args.summary:
        from kbm_toolkit.store.shipped import open_store

        if not _gpu_visible():  # every submission would fail in its worker, one by one
            sys.exit("Error: no CUDA device is visible: the checkers' evals run on a GPU (--summary reads a results file)")

        if args.kbv:  # kbm's kbv protocol builds KBV's published hidden configs from this checkout
            os.environ["KBM_KBV"] = str(args.kbv.expanduser().resolve())
        store = open_store(args.store)
        run_conformance(store, args.out, args.kernelbench, args.kbv, args.protocols, args.problems,
                        args.per_problem, args.workers, args.timeout, args.reference, budget=args.budget,
                        suite=args.suite)
    rows = list(read_results(args.out).values())
    print()
    print(disagreement_table(rows))
    print()
    print(summary_table(summarize(rows)))
    if args.json:
        args.json.write_text(json.dumps(summary_json(rows), indent=2))


if __name__ == "__main__":
    main()
