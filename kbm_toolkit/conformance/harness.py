"""A conformance run: kbm's stored verdicts against the real checkers' on the same mutants.

Each protocol is paired with the checker that implements it: `kernelbench-head` (5 trials, 1e-4)
and `kernelbench` (v0.1's 1e-2, patched into the eval's tolerance function) with KernelBench's
eval, `kbv` and `kbv-reconstructed` with KernelBench-Verified's (5 trials, then its hidden tests).
A suite `kbm suite --format kbv` wrote is paired with KernelBench-Verified's eval too, run in a copy
of its checkout with the suite's hidden tests laid over its own (`suite_checkout`), on those alone
(no official trials) at the suite's tolerance: what a maintainer who drops the folder in gets. A submission the checker
rejects (fails, or whose eval raises or dies) agrees with kbm when kbm's store shows the mutant
detected. Results stream to a JSONL file, one row per (protocol, problem, mutant); a run resumes
from it, and `summarize` reads it back.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

from kbm_toolkit.analysis.matrix import load_matrices
from kbm_toolkit.conformance.checkers import KBV, KERNELBENCH, hidden_test_path, kbv_problem_path
from kbm_toolkit.conformance.model_new import SubmissionRef, submission_source
from kbm_toolkit.conformance.selection import DEFAULT_PROBLEMS, SALT, Candidate, Selection, select
from kbm_toolkit.conformance.workers import TIMEOUT_S, Pool, Task
from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import STRICT
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.protocols.registry import load_protocol

PAIRINGS = {"kernelbench-head": KERNELBENCH, "kernelbench": KERNELBENCH, "kbv": KBV, "kbv-reconstructed": KBV}
"""kbm protocol -> the checker whose eval implements it. `kbv` builds KBV's published hidden
configs where `KBM_KBV` names its checkout (a store needs cells on them); `kbv-reconstructed`, kbm's
seeded reconstruction (the inputs the shipped stores hold): KBV's eval runs its published ones
either way."""


@dataclass
class Plan:
    """What a run submits: the tasks, and per protocol what was selected (and left out, and why)."""

    tasks: list[Task]
    selections: dict[str, Selection]


def _body(text: str) -> str:
    """A problem file without its leading comment block (KBV's copies add a licence header)."""
    lines = text.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    return "\n".join(lines)


def checkout_commit(checkout: str | Path) -> str | None:
    """The commit a git checkout has out, read from .git without running git (None if unknown)."""
    git = Path(checkout) / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        if (git / ref).is_file():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        return None
    return None


def _level(problem: Problem) -> int:
    """The level's number (`level2` -> 2), as KBV's hidden tests and problem copies are filed."""
    return int(problem.level.rsplit("/", 1)[-1].removeprefix("level"))


def _task(protocol: str, checker: str, tolerance: float, candidate: Candidate, problem: Problem, kernelbench: Path,
          kbv: Path | None, reference: str, trials: int) -> Task:
    """The task that submits `candidate` to `checker` for `protocol` (numbered later)."""
    root = kbv if checker == KBV and kbv else kernelbench
    level = _level(problem)
    # KBV's scripts hand its eval its own copy of the problem, the one its hidden tests load
    path = kbv_problem_path(root, level, problem.path.name) if checker == KBV else problem.path
    ref = SubmissionRef(problem.key, str(path), str(substrate_for(problem).folder), candidate.substrate_hash,
                        candidate.mutant, candidate.source_hash, candidate.name)
    source = Path(path).read_text()
    row = {"protocol": protocol, "checker": checker, "problem": problem.key, "key": candidate.key,
           "mutant": candidate.mutant, "kind": "mutant" if candidate.mutant else "control",
           "name": candidate.name, "family": candidate.family, "kbm_detected": candidate.detected,
           "kbm_cells": candidate.cells, "protocol_tolerance": tolerance, "reference": reference,
           "problem_file": str(path), "problem_sha256": hashlib.sha256(source.encode()).hexdigest(),
           "problem_as_stored": _body(source) == _body(problem.source), "checkout_commit": checkout_commit(root)}
    # an eval judging at its own tolerance already leaves it as it is (`checkers.patched_tolerance`)
    return Task(0, checker, str(root), str(path), submission_source(ref), trials, tolerance,
                str(hidden_test_path(root, level, problem.number)) if checker == KBV else None, reference, row)


def suite_checkout(kbv: str | Path, suite: str | Path, into: str | Path) -> Path:
    """A copy of the KernelBench-Verified checkout `kbv` (its git history left out) with the hidden
    tests of `suite` (a folder `kbm suite --format kbv` wrote) laid over its own, as a maintainer
    would drop them in; made afresh each time."""
    import shutil

    into = Path(into)
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(kbv, into, ignore=shutil.ignore_patterns(".git"))
    hidden = Path(suite) / "hidden_tests"
    if not hidden.is_dir():
        raise KbmError("no hidden_tests/ here: write the suite with kbm suite --format kbv", suite)
    shutil.copytree(hidden, into / "hidden_tests", dirs_exist_ok=True)
    return into.resolve()


def plan(store: Any, kernelbench: str | Path, kbv: str | Path | None = None, protocols: Iterable[str] = PAIRINGS,
         problems: Iterable[str] = DEFAULT_PROBLEMS, per_problem: int = 25, reference: str = STRICT,
         trials: int = 5, control: bool = True, salt: str = SALT, suite: str | Path | None = None,
         suite_kbv: str | Path | None = None) -> Plan:
    """The tasks of a run: per protocol, `per_problem` hash-drawn decided mutants of each problem
    (and its correct substrate, with `control`), interleaved so a run cut short covers every
    problem and protocol. `kbv` protocols are left out without a KBV checkout. With `suite` (a
    folder `kbm suite --format kbv` wrote) and `suite_kbv` (`suite_checkout`'s copy), the suite
    too, on KBV's eval with no official trials; problems whose KBV copy differs in code from the
    file kbm measured are left out (the suite's files refuse them)."""
    kernelbench = Path(kernelbench).resolve()  # the workers read these paths: absolute, wherever they run
    kbv_root = Path(kbv).resolve() if kbv else None
    protocols = list(protocols)
    unknown = [p for p in protocols if p not in PAIRINGS]
    if unknown:
        raise KbmError(f"no checker to compare protocol {unknown[0]!r} with (known: {', '.join(PAIRINGS)})")
    pairs = [(load_protocol(p), PAIRINGS[p], kbv_root, trials) for p in protocols if PAIRINGS[p] != KBV or kbv_root]
    if suite is not None:
        if suite_kbv is None:
            raise KbmError("a suite runs on a KernelBench-Verified checkout with its hidden tests (suite_checkout)")
        pairs.append((load_protocols(Path(suite))[0], KBV, Path(suite_kbv).resolve(), 0))
    problem_set = ProblemSet.discover(kernelbench)
    wanted = [problem_set.get(r) for r in problems]
    keys = {p.key for p in wanted}
    matrices = {mx.problem.key: mx for mx in load_matrices(store) if mx.problem.key in keys}
    selections: dict[str, Selection] = {}
    ranked: list[tuple[int, int, int, Task]] = []
    order = {p.key: i for i, p in enumerate(wanted)}
    by_key = {p.key: p for p in wanted}
    for pi, (protocol, checker, root, n_trials) in enumerate(pairs):
        name = protocol.name
        selection = selections[name] = select(store, matrices, protocol, wanted, per_problem, salt, control, reference)
        if checker == KBV and root:
            _drop_without_hidden_tests(selection, wanted, root, same_code=n_trials == 0)
        seen: dict[str, int] = {}
        for c in selection.candidates:
            rank = seen[c.problem] = seen.get(c.problem, -1) + 1  # the control is rank 0 of its problem
            task = _task(name, checker, protocol.tolerance, c, by_key[c.problem], kernelbench, root, reference,
                         n_trials)
            ranked.append((rank, order[c.problem], pi, task))
    tasks = [t for *_, t in sorted(ranked, key=lambda r: r[:3])]
    for n, task in enumerate(tasks):
        task.id = n
    return Plan(tasks, selections)


def _drop_without_hidden_tests(selection: Selection, problems: list[Problem], kbv: Path, same_code: bool = False) -> None:
    """Leave out the problems KBV has no hidden test file for; with `same_code`, also those whose
    KBV copy is not, comment header aside, the file kbm measured."""
    for p in problems:
        if not hidden_test_path(kbv, _level(p), p.number).is_file():
            selection.skipped[p.key] = "KBV has no hidden test file for it"
        elif same_code and _body(kbv_problem_path(kbv, _level(p), p.path.name).read_text()) != _body(p.source):
            selection.skipped[p.key] = "KBV's copy of the problem differs in code from the file kbm measured"
        else:
            continue
        selection.candidates = [c for c in selection.candidates if c.problem != p.key]


# -- the results file -------------------------------------------------------------------------------

def result_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """What a result is of: (protocol, problem, mutant id or `substrate`)."""
    return row["protocol"], row["problem"], row["key"]


def read_results(path: str | Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The rows of a results file by `result_key`, the last of each kept (a retried one supersedes)."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    p = Path(path)
    if not p.is_file():
        return rows
    for line in p.read_text().splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut off by a killed run: that submission runs again
            rows[result_key(row)] = row
    return rows


def result_row(task: Task, reply: dict[str, Any]) -> dict[str, Any]:
    """The JSONL row of one finished task: kbm's side, the checker's verdict, and whether they agree."""
    row = dict(task.extra)
    verdict = reply.get("verdict") or {}
    status, message = reply["status"], reply.get("message", "")
    if status == "ok" and verdict.get("compiled") is False:
        # every stored mutant compiled when it was screened: a submission that does not load (a
        # refused hash, an import error) says nothing about the checker
        status, message = "error", f"the submission did not load: {verdict.get('error', '')[:300]}"
    # the checkers' own scripts count an eval that dies as a failed submission; a timeout or a
    # harness error gives no verdict
    correct = verdict.get("correct") if status == "ok" else False if status == "crash" else None
    row.update(status=status, message=message, checker_correct=correct,
               agree=None if correct is None else row["kbm_detected"] == (not correct),
               wall_s=round(reply.get("seconds", 0.0), 3),
               **{k: v for k, v in verdict.items() if k != "checker"})
    return row


def progress_line(i: int, n: int, row: dict[str, Any]) -> str:
    """One line per finished submission, for stderr."""
    kbm = "detected" if row["kbm_detected"] else "survives"
    said = {True: "passes", False: "rejects", None: row["status"]}[row["checker_correct"]]
    verdict = {True: "agree", False: "DISAGREE", None: "no verdict"}[row["agree"]]
    what = row["key"] if row["mutant"] else "control"
    why = f": {row['message'][:100]}" if row["status"] != "ok" and row.get("message") else ""
    return (f"[{i}/{n}] {row['protocol']:<16} {row['problem']} {what}: kbm {kbm}, {row['checker']} {said} "
            f"-> {verdict} ({row['wall_s']:.1f} s){why}")


def execute(tasks: list[Task], out: str | Path, pool: Any, progress: TextIO | None = sys.stderr,
            retry_errors: bool = True, budget: float | None = None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Run the tasks the results file `out` has no row for (with `retry_errors`, also those whose
    row is a harness error) through `pool`, appending a row as each finishes; every row after.
    With `budget`, no submission starts after that many seconds (a later run resumes)."""
    done = read_results(out)
    left = [t for t in tasks if result_key(t.extra) not in done
            or (retry_errors and done[result_key(t.extra)]["status"] == "error")]
    if progress is not None and len(left) < len(tasks):
        print(f"resuming: {len(tasks) - len(left)} of {len(tasks)} submissions already in {out}", file=progress)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    stop_at = time.monotonic() + budget if budget is not None else None
    finished = 0
    with open(out, "a") as f:
        for task, reply in pool.run(left, stop_at=stop_at):
            row = result_row(task, reply)
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            done[result_key(row)] = row
            finished += 1
            if progress is not None:
                print(progress_line(finished, len(left), row), file=progress, flush=True)
    if progress is not None and finished < len(left):
        print(f"{len(left) - finished} submissions not run (the budget is spent): run again with the same results file",
              file=progress)
    return done


def run_conformance(store: Any, out: str | Path, kernelbench: str | Path, kbv: str | Path | None = None,
                    protocols: Iterable[str] = PAIRINGS, problems: Iterable[str] = DEFAULT_PROBLEMS,
                    per_problem: int = 25, workers: int = 8, timeout: float = TIMEOUT_S, reference: str = STRICT,
                    trials: int = 5, progress: TextIO | None = sys.stderr, budget: float | None = None,
                    pool: Callable[..., Any] = Pool, suite: str | Path | None = None
                    ) -> tuple[Plan, dict[tuple[str, str, str], dict[str, Any]]]:
    """Plan a run (`plan`) and execute it into `out` (resuming), `workers` processes on one GPU,
    starting no submission after `budget` seconds; the plan and every row of the results file.
    With `suite`, KBV's eval runs it in `suite_checkout`'s copy of `kbv`, beside `out`."""
    suite_kbv = None
    if suite is not None:
        if kbv is None:
            raise KbmError("a suite runs on KernelBench-Verified's eval: give its checkout")
        suite_kbv = suite_checkout(kbv, suite, Path(str(out) + ".kbv-suite"))
    the_plan = plan(store, kernelbench, kbv, protocols, problems, per_problem, reference, trials, suite=suite,
                    suite_kbv=suite_kbv)
    if progress is not None:
        for name, selection in the_plan.selections.items():
            for key, why in selection.skipped.items():
                print(f"{name}: {key} left out: {why}", file=progress)
    rows = execute(the_plan.tasks, out, pool(workers, Path(str(out) + ".logs"), timeout), progress, budget=budget)
    return the_plan, rows


# -- the summary ------------------------------------------------------------------------------------

@dataclass
class Summary:
    """One protocol's comparison with its checker, over the rows of a results file."""

    checker: str
    protocol: str
    n: int = 0
    """Mutants with a verdict from both sides."""
    problems: int = 0
    agree: int = 0
    disagree: int = 0
    no_verdict: int = 0
    """Mutants whose submission timed out or hit a harness error."""
    kbm_detected: int = 0
    controls: int = 0
    controls_passed: int = 0
    tolerances: str = ""
    """The fp32 tolerances the checker's eval judged at (and whether patched in)."""

    @property
    def agreement_pct(self) -> float | None:
        """Agreement in percent of `n` (None with no verdicts)."""
        return 100.0 * self.agree / self.n if self.n else None


def summarize(rows: Iterable[dict[str, Any]]) -> list[Summary]:
    """Per (checker, protocol), the counts of a results file's rows, in PAIRINGS order."""
    out: dict[tuple[str, str], Summary] = {}
    problems: dict[tuple[str, str], set[str]] = {}
    tolerances: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        k = (row["checker"], row["protocol"])
        s = out.setdefault(k, Summary(*k))
        if row.get("tolerance") is not None:
            tolerances.setdefault(k, set()).add(f"{row['tolerance']:g} ({row.get('tolerance_source')})")
        if row["kind"] == "control":
            s.controls += 1
            s.controls_passed += row["checker_correct"] is True
            continue
        if row["agree"] is None:
            s.no_verdict += 1
            continue
        s.n += 1
        s.agree += row["agree"]
        s.disagree += not row["agree"]
        s.kbm_detected += bool(row["kbm_detected"])
        problems.setdefault(k, set()).add(row["problem"])
    order = list(PAIRINGS)
    for k, s in out.items():
        s.problems = len(problems.get(k, ()))
        s.tolerances = ", ".join(sorted(tolerances.get(k, ())))
    return sorted(out.values(), key=lambda s: (order.index(s.protocol) if s.protocol in order else len(order), s.checker))


def summary_table(summaries: list[Summary]) -> str:
    """The short table a run ends with."""
    head = f"{'checker':<12} {'protocol':<17} {'n':>5} {'problems':>8} {'agree':>6} {'disagree':>8} {'agreement':>10}"
    lines = [head, "-" * len(head)]
    for s in summaries:
        pct = f"{s.agreement_pct:.1f}%" if s.agreement_pct is not None else "-"
        lines.append(f"{s.checker:<12} {s.protocol:<17} {s.n:>5} {s.problems:>8} {s.agree:>6} {s.disagree:>8} {pct:>10}")
    notes = [f"{s.protocol}: correct substrates passed {s.controls_passed} of {s.controls}; "
             f"{s.no_verdict} without a verdict; kbm detects {s.kbm_detected} of {s.n}; eval tolerance {s.tolerances or '-'}"
             for s in summaries]
    return "\n".join(lines + [""] + notes)


def disagreements(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows where the checker and kbm's store disagree (controls the checker rejects included)."""
    return [r for r in rows if r["agree"] is False]


def _margins(row: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.3g}"

    return " ".join(f"{c['label'].replace('official trial ', 't')}={c['outcome'] or '?'}:{fmt(c['margin'])}"
                    f"{'*' if c.get('kills') else ''}" for c in row["kbm_cells"])


def disagreement_table(rows: Iterable[dict[str, Any]]) -> str:
    """Every disagreement: kbm's stored margins on the protocol's inputs (`*`: kills at its
    tolerance) beside the checker's reported max differences and error."""
    found = disagreements(rows)
    if not found:
        return "no disagreements"
    lines = []
    for r in found:
        said = "passes" if r["checker_correct"] else "rejects"
        diffs = ", ".join(f"{v:g}" for v in (r.get("max_difference") or []) + (r.get("hidden_max_difference") or []))
        lines += [f"{r['protocol']} {r['problem']} {r['key']}: kbm {'detected' if r['kbm_detected'] else 'survives'}, "
                  f"{r['checker']} {said} (trials {r.get('trials') or '-'}; max difference {diffs or '-'})",
                  f"    {r['name']}",
                  f"    kbm margins at {r['protocol_tolerance']:g}: {_margins(r)}"]
        if r.get("error"):
            lines.append(f"    checker: {r['error'][:300]}")
    return "\n".join(lines)


def summary_json(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summaries as plain records (with the agreement percentage)."""
    return [{**asdict(s), "agreement_pct": s.agreement_pct} for s in summarize(rows)]
