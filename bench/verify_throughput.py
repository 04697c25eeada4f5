"""Seconds per submission: `kbm verify` against KernelBench's own evaluation loop, on the same
folder of submissions, in the same call.

The submissions are kbm's mutants of a few KernelBench problems (and each problem's correct
substrate), drawn as `bench/conformance.py` draws them: verdict decided, none that hangs. KernelBench's
side is its `eval_kernel_against_ref`, imported from the checkout, one submission after another in
one worker process, 5 trials at v0.1's 1e-2 with its reference as it ships (TF32 convolutions);
kbm's side is `kbm verify -a kernelbench` (the same trials, tolerance and reference), inputs built
once per problem, with one worker and then with `--workers` (several processes on the one GPU,
each on its own share of the submissions). Both sides include starting their workers. Each kbm
side compiles every submission afresh (a cubin cache of its own); KernelBench's side runs last,
on the cache the second kbm side filled, so it pays no NVRTC compile: the comparison is, if
anything, in KernelBench's favour. Needs a CUDA GPU.

    python bench/verify_throughput.py --kernelbench PATH [--store @kernelbench] [--problems P ...]
        [--per-problem 6] [--workers 4] [--out DIR]

Per problem: submissions, seconds per submission on each side (kbm's with one worker; the first
problem's includes starting it) and their ratio. Then where kbm's one worker spent its time (the
submission's own work, from the store: loading its file, building its model, its forwards; the
rest is kbm's: starting the worker, inputs, references, comparing, checks); then the whole:
harness, submissions, seconds, seconds per submission; the ratios; and how many verdicts agree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbm_toolkit.analysis.submissions import submission_verdicts  # noqa: E402
from kbm_toolkit.conformance.corpus import export_corpus  # noqa: E402
from kbm_toolkit.conformance.harness import execute, plan  # noqa: E402
from kbm_toolkit.conformance.selection import DEFAULT_PROBLEMS  # noqa: E402
from kbm_toolkit.conformance.workers import Pool  # noqa: E402
from kbm_toolkit.judging import PYTORCH_DEFAULT  # noqa: E402
from kbm_toolkit.problems.problem_set import ProblemSet  # noqa: E402
from kbm_toolkit.problems.submission import find_submissions  # noqa: E402
from kbm_toolkit.protocols.registry import load_protocol  # noqa: E402
from kbm_toolkit.vocabulary import Verdict  # noqa: E402


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout (its eval and problems)")
    ap.add_argument("--store", default="@kernelbench", help="the store the mutants are drawn from")
    ap.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS),
                    help="problems (default: the 13 small ones bench/conformance.py uses)")
    ap.add_argument("--per-problem", type=int, default=6, help="mutants per problem (and its correct substrate)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per submission on KernelBench's side")
    ap.add_argument("--workers", type=int, default=8,
                    help="also time kbm verify with this many workers on the GPU (KernelBench's scripts run one "
                         "eval process per GPU)")
    ap.add_argument("--out", type=Path, default=Path("verify-throughput"), help="corpus, stores, logs (made afresh)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    from kbm_toolkit.evaluation.device import describe_device
    from kbm_toolkit.evaluation.verify import VerifyOptions, verify_submissions
    from kbm_toolkit.store import Store
    from kbm_toolkit.store.shipped import open_store

    env = describe_device()
    if not env.get("cuda"):
        sys.exit("Error: no CUDA device is visible: both harnesses run submissions on a GPU")
    shutil.rmtree(args.out, ignore_errors=True)
    store = open_store(args.store)
    kernelbench = load_protocol("kernelbench")
    the_plan = plan(store, args.kernelbench, None, ["kernelbench"], args.problems, args.per_problem,
                    reference=PYTORCH_DEFAULT, trials=5)
    problem_set = ProblemSet.discover(args.kernelbench)
    mutants = {t.extra["mutant"] for t in the_plan.tasks if t.extra["mutant"]}
    problems = [problem_set.get(k) for k in args.problems]
    corpus = export_corpus(store, problems, args.out / "corpus", mutants=mutants, control=True)
    found = find_submissions([args.out / "corpus"], problem_set)
    finished: dict[str, float] = {}  # one worker does the problems in turn: each took the time since the last
    options = VerifyOptions(workers=1, on_problem=lambda key, _: finished.setdefault(key, time.monotonic()))
    os.environ["KBM_CACHE"] = str(args.out / "cache-1")  # the workers inherit it: every compile is timed
    kbm_began = time.monotonic()
    summary = verify_submissions(Store(args.out / "verify.db"), found, [kernelbench], env, options)
    kbm_s = time.monotonic() - kbm_began
    os.environ["KBM_CACHE"] = str(args.out / "cache-n")
    began = time.monotonic()
    verify_submissions(Store(args.out / "verify-workers.db"), found, [kernelbench], env,
                       VerifyOptions(workers=args.workers))
    workers_s = time.monotonic() - began
    began = time.monotonic()
    rows = execute(the_plan.tasks, args.out / "kernelbench.jsonl", Pool(1, args.out / "logs", args.timeout),
                   progress=None, retry_errors=False)
    kb_s = time.monotonic() - began
    judged = {Path(v.submission["path"]).name: v.verdict("kernelbench")
              for v in submission_verdicts(Store(args.out / "verify.db"), [kernelbench])}
    file_of = {(e.problem, e.mutant): e.file for e in corpus.written}  # both sides run the same mutants
    agree = compared = 0
    for task in the_plan.tasks:
        row = rows.get((task.extra["protocol"], task.extra["problem"], task.extra["key"]))
        name = file_of.get((task.extra["problem"], task.extra["mutant"]))
        if row is None or row["checker_correct"] is None or name not in judged:
            continue
        compared += 1
        agree += (judged[name] == Verdict.ACCEPTS) == row["checker_correct"]
    n = len(found)
    ends = [kbm_began, *sorted(finished.values())]
    kbm_problem = {k: end - ends[i] for i, (k, end) in enumerate(sorted(finished.items(), key=lambda kv: kv[1]))}
    print(f"kbm verify: {summary.cells} cells, {summary.restarts} restarts; the first problem's time includes "
          "starting the worker")
    print(f"{'problem':<58} {'n':>3} {'KernelBench s/sub':>17} {'kbm s/sub':>10} {'ratio':>6}")
    for key in args.problems:
        key = problem_set.get(key).key
        subs = [s for s in found if s.problem.key == key]
        theirs = [r["wall_s"] for r in rows.values() if r["problem"] == key]
        if not subs or not theirs or key not in kbm_problem:
            continue
        a, b = sum(theirs) / len(theirs), kbm_problem[key] / len(subs)
        print(f"{key[:58]:<58} {len(subs):>3} {a:>17.3f} {b:>10.3f} {a / b:>5.1f}x")
    print(_split(Store(args.out / "verify.db"), kbm_s))
    print(f"{'harness':<34} {'submissions':>11} {'seconds':>8} {'s/submission':>13}")
    print(f"{'KernelBench eval_kernel_against_ref':<34} {len(the_plan.tasks):>11} {kb_s:>8.1f} "
          f"{kb_s / max(1, len(the_plan.tasks)):>13.3f}")
    print(f"{'kbm verify -a kernelbench':<34} {n:>11} {kbm_s:>8.1f} {kbm_s / max(1, n):>13.3f}")
    print(f"{f'kbm verify --workers {args.workers}':<34} {n:>11} {workers_s:>8.1f} {workers_s / max(1, n):>13.3f}")
    per = kb_s / max(1, len(the_plan.tasks))
    print(f"kbm verify is {per / (kbm_s / max(1, n)):.1f}x faster per submission with one worker, "
          f"{per / (workers_s / max(1, n)):.1f}x with {args.workers}; verdicts agree on {agree} of {compared}")

def _split(store, wall_s: float) -> str:
    """Where one worker's time went: the submissions' own work (the store's load, model build and
    forward times) and the rest, which is kbm's."""
    load, = store.db.execute("select coalesce(sum(load_ms), 0) / 1000 from submissions").fetchone()
    build, forward = store.db.execute("select coalesce(sum(build_ms), 0) / 1000, coalesce(sum(ms), 0) / 1000 "
                                      "from submission_cells").fetchone()
    rest = wall_s - load - build - forward
    parts = [("loading files", load), ("building models", build), ("forwards", forward), ("kbm's own", rest)]
    return "kbm verify, one worker, " + ", ".join(f"{name} {s:.1f} s ({s / wall_s:.0%})" for name, s in parts)


if __name__ == "__main__":
    main()
