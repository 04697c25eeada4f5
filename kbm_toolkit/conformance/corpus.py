"""kbm's mutants as a folder of KernelBench submissions: a corpus whose verdicts the store knows.

`kbm export --format kernelbench` writes each chosen mutant (and, first, the correct substrate as
a control) as a `ModelNew` file (`model_new.submission_source`) under the name KernelBench's run
folders give samples, `level_{L}_problem_{id}_sample_{s}_kernel.py`, so `kbm verify DIR` or any
harness that reads such folders takes it as it is. Problems outside KernelBench's levels (kbm's
demo set, a pack's) have no such name: their files are named after the problem's key, and the
folder's index, `kbm-submissions.json`, says which problem and mutant each file holds.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kbm_toolkit.conformance.model_new import submission_ref, submission_source
from kbm_toolkit.conformance.selection import SALT, draw_key
from kbm_toolkit.errors import KbmError
from kbm_toolkit.outputs import output_file, output_folder
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.submission import INDEX
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.vocabulary import MutantStatus

_KERNELBENCH_LEVEL = re.compile(r"^level(\d+)$")


@dataclass(frozen=True)
class Exported:
    """One file written: which problem and mutant it runs (`mutant` None: the correct substrate)."""

    file: str
    problem: str
    mutant: str | None
    name: str
    family: str


@dataclass
class Corpus:
    """What an export wrote, and the problems it left out with the reason."""

    folder: Path
    written: list[Exported] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)


def sample_file(problem: Problem, sample: int) -> str:
    """The file name of a problem's sample: KernelBench's layout where the level is one of its own."""
    match = _KERNELBENCH_LEVEL.match(problem.level)
    if match:
        return f"level_{match.group(1)}_problem_{problem.number}_sample_{sample}_kernel.py"
    return f"{problem.key.replace('/', '__')}__sample_{sample}_kernel.py"


def export_corpus(store: Any, problems: list[Problem], folder: str | Path, per_problem: int | None = None,
                  mutants: Iterable[str] | None = None, control: bool = True, salt: str = SALT) -> Corpus:
    """Write the chosen mutants of `problems` as submissions into `folder`: those named in
    `mutants`, else a hash-drawn `per_problem` of each problem's distinct mutants (all without
    it), after the correct substrate when `control`. A problem whose substrate here is not the one
    its stored mutants were made from is left out (the files would refuse to run)."""
    out = output_folder(folder)
    corpus = Corpus(out)
    wanted = set(mutants) if mutants is not None else None
    for problem in problems:
        rows = [r for r in store.mutants(problem.key)
                if (r["id"] in wanted if wanted is not None else r["status"] == MutantStatus.DISTINCT)]
        if wanted is None and not rows:
            corpus.left_out[problem.key] = "no distinct mutants in the store"
            continue
        if not rows:
            continue
        try:
            substrate = substrate_for(problem)
        except KbmError as e:
            corpus.left_out[problem.key] = e.line()
            continue
        stale = {r["substrate_hash"] for r in rows} - {substrate.content_hash}
        if stale:
            corpus.left_out[problem.key] = ("the substrate here is not the one its stored mutants were made from "
                                            f"(content hash {substrate.content_hash[:12]}; kbm mutate remakes them)")
            continue
        rows.sort(key=lambda r: draw_key(problem.key, r["id"], salt))
        chosen = rows if wanted is not None or per_problem is None else rows[:per_problem]
        items: list[dict[str, Any] | None] = ([None] if control else []) + chosen
        for sample, row in enumerate(items):
            ref = submission_ref(problem, substrate, row)
            name = sample_file(problem, sample)
            with output_file(out / name) as path:
                path.write_text(submission_source(ref))
            corpus.written.append(Exported(name, problem.key, ref.mutant, ref.name, (row or {}).get("family") or ""))
    if wanted is not None:
        found = {e.mutant for e in corpus.written}
        for m in sorted(wanted - found):
            corpus.left_out[m] = "no such mutant among the problems' stored mutants"
    with output_file(out / INDEX) as path:
        path.write_text(json.dumps([asdict(e) for e in corpus.written], indent=1))
    return corpus
