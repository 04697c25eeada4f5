"""Submissions: candidate solutions in a benchmark's format (KernelBench: a file defining `ModelNew`).

A submission is given as a file, or found in a folder. KernelBench's generation scripts write
each sample as `level_{L}_problem_{id}_sample_{s}_kernel.py` in a run folder, which names its
problem; any other file needs the problem named. Files are read and parsed here, never run: a
syntax error or a file without `ModelNew` is malformed, one line each. Running them is
`evaluation.verify`'s part.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from kbm_toolkit.errors import KbmError, ProblemError
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.vocabulary import SubmissionStatus

SAMPLE_NAME = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
"""A sample in KernelBench's run-folder layout: level, problem number, sample number."""

INDEX = "kbm-submissions.json"
"""In a folder `kbm export --format kernelbench` wrote: each file's problem (and the mutant it runs),
for the problems KernelBench's sample names cannot name (kbm's demo set, a pack's)."""

CLASS_NAME = "ModelNew"
"""What a KernelBench submission defines: built as `ModelNew(*get_init_inputs())` after seed 42."""


class SubmissionError(KbmError):
    """A submission cannot be taken: not found, not text, its problem cannot be told, or (one kbm
    wrote) it runs a substrate or mutant other than the one its store evaluated."""


@dataclass(frozen=True)
class Submission:
    """One candidate solution for one problem: its file's text, as read."""

    path: Path
    problem: Problem
    source: str
    sample: int | None = None
    """The sample number of KernelBench's layout; None for a file named otherwise."""

    @cached_property
    def id(self) -> str:
        """Stable id: sha256 of the problem's key and the text, 16 hex digits (an edit is a new submission)."""
        return hashlib.sha256(f"{self.problem.key}\0{self.source}".encode()).hexdigest()[:16]

    @property
    def source_hash(self) -> str:
        """sha256 of the text alone."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    @cached_property
    def malformed(self) -> str | None:
        """Why the file cannot be a submission (a syntax error, no `ModelNew`), None when it can."""
        try:
            tree = ast.parse(self.source, filename=str(self.path))
        except SyntaxError as e:
            return f"line {e.lineno}: syntax error: {e.msg}"
        if not any(_defines(node, CLASS_NAME) for node in tree.body):
            return f"defines no {CLASS_NAME} (a KernelBench submission is a module with class {CLASS_NAME})"
        return None

    def row(self) -> dict[str, Any]:
        """The submission's row in a store's `submissions` table, before it is run."""
        status = SubmissionStatus.MALFORMED if self.malformed else SubmissionStatus.READY
        return {"id": self.id, "problem": self.problem.key, "path": str(self.path), "name": self.path.name,
                "sample": self.sample, "source_hash": self.source_hash, "status": status.value,
                "note": self.malformed}

    def record(self) -> dict[str, Any]:
        """What a worker needs to run it: its id, path (for tracebacks) and text."""
        return {"id": self.id, "path": str(self.path), "source": self.source}


def _defines(node: ast.stmt, name: str) -> bool:
    """Whether a top-level statement binds `name` (a class, or `ModelNew = ...`)."""
    if isinstance(node, ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name) == name for a in node.names)
    return False


def sample_problem(path: Path) -> tuple[str, int] | None:
    """(`level{L}/{id}`, sample) for a file in KernelBench's layout, None for any other name."""
    match = SAMPLE_NAME.match(path.name)
    if match is None:
        return None
    level, number, sample = match.groups()
    return f"level{int(level)}/{int(number)}", int(sample)


def find_submissions(paths: Iterable[str | Path], problems: ProblemSet, problem: str | None = None) -> list[Submission]:
    """The submissions in `paths` (files, or folders searched for `*.py`), each with its problem:
    `problem` when given, else the one KernelBench's sample name says. A file whose problem
    cannot be told, or that cannot be read, is a one-line SubmissionError."""
    named = problems.get(problem) if problem else None
    found: list[Submission] = []
    for given in paths:
        path = Path(given)
        index = _index(path) if path.is_dir() and named is None else {}
        if path.is_dir():
            files = sorted(f for f in path.rglob("*.py") if f.is_file())
            if named is None:  # a run folder holds other files too (logs, eval scripts): its samples only
                files = [f for f in files if SAMPLE_NAME.match(f.name) or f.resolve() in index]
            if not files:
                raise SubmissionError("no submission here: no level_{L}_problem_{id}_sample_{s}_kernel.py file"
                                      + ("" if named else " (name the problem with --problem for other files)"), path)
        elif path.is_file():
            files = [path]
            index = _index(path.parent) if named is None else {}
        else:
            raise SubmissionError("no such file or folder", path)
        found += [_read(f, named or _indexed(index.get(f.resolve()), problems, f), problems) for f in files]
    seen: dict[str, Submission] = {}
    for s in found:
        seen.setdefault(s.id, s)  # the same file given twice, or two identical samples: judged once
    return list(seen.values())


def _index(folder: Path) -> dict[Path, str]:
    """File -> problem key, from the folder's `INDEX` (none there: empty)."""
    path = folder / INDEX
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())
        return {(folder / e["file"]).resolve(): str(e["problem"]) for e in entries}
    except (ValueError, TypeError, KeyError) as e:
        raise SubmissionError(f"not a list of {{file, problem}} entries: {type(e).__name__}: {e}", path) from None


def _indexed(key: str | None, problems: ProblemSet, path: Path) -> Problem | None:
    if key is None:
        return None
    try:
        return problems.get(key)
    except ProblemError as e:
        raise SubmissionError(f"{INDEX} names problem {key}, which is not loaded ({e.message})", path) from None


def _read(path: Path, named: Problem | None, problems: ProblemSet) -> Submission:
    sample = sample_problem(path)
    if named is not None:
        problem = named
    elif sample is not None:
        try:
            problem = problems.get(sample[0])
        except ProblemError as e:
            raise SubmissionError(f"its name says problem {sample[0]}, which is not loaded ({e.message}); "
                                  "give --kernelbench CHECKOUT, or name it with --problem", path) from None
    else:
        raise SubmissionError("which problem does it solve? Name it with --problem (KernelBench's run folders "
                              "name their samples level_{L}_problem_{id}_sample_{s}_kernel.py)", path)
    try:
        source = path.read_text()
    except UnicodeDecodeError as e:
        raise SubmissionError(f"not UTF-8 text: {e.reason}", path) from None
    except OSError as e:
        raise SubmissionError(f"cannot read it: {e.strerror}", path) from None
    return Submission(path, problem, source, sample[1] if sample else None)
