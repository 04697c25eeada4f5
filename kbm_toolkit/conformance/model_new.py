"""A kbm mutant (or a correct substrate) as a KernelBench submission: a file defining `ModelNew`.

KernelBench's eval seeds 42 and calls `ModelNew(*get_init_inputs())` right after building the
reference `Model` the same way, moves it to the GPU and calls `forward(*inputs)`. The submission's
`ModelNew` builds the problem's own `Model` first (same seed, same draws: the reference's weights),
holds it as a submodule, and its forward runs the kernel through kbm's launcher on that model, as
a kbm worker does. The file carries references only (problem file, substrate folder, mutant id and
hashes); `bind` re-derives the mutant from kbm's rules when the file is loaded and refuses one
whose substrate or mutated source is not the one the store evaluated.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from kbm_toolkit.mutation.mutants import Mutant, generate
from kbm_toolkit.mutation.rules import load_rules
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.submission import SubmissionError
from kbm_toolkit.problems.substrate import Substrate


@dataclass(frozen=True)
class SubmissionRef:
    """What a submission runs: a problem, a substrate at one content hash, and one of its mutants."""

    problem_key: str
    problem_path: str
    """The problem file whose `Model` the submission builds (the one the checker is given)."""
    substrate: str
    """The substrate folder."""
    substrate_hash: str
    """The content hash the store's mutant row (or the store's substrate) has."""
    mutant: str | None = None
    """The mutant id; None: the correct substrate itself."""
    source_hash: str | None = None
    """sha256 of the mutated file, as the store's mutant row has it."""
    name: str = ""
    """The mutant's display name (a comment in the file)."""
    launch: str | None = None
    """A placed mutant's launch (`NAME#K`, `mutation.positions`): the one that runs the mutated image."""


def submission_ref(problem: Problem, substrate: Substrate, row: dict[str, Any] | None = None,
                   problem_path: str | Path | None = None) -> SubmissionRef:
    """The reference for the store's mutant `row` of `problem` (None: the correct substrate, at
    the substrate's current hash); `problem_path` overrides the problem file the checker uses."""
    path = str(problem_path or problem.path)
    if row is None:
        return SubmissionRef(problem.key, path, str(substrate.folder), substrate.content_hash,
                             name=f"{problem.key} (the correct substrate)")
    return SubmissionRef(problem.key, path, str(substrate.folder), row["substrate_hash"], row["id"],
                         row["source_hash"], row.get("name") or row["id"], row.get("launch"))


_TEMPLATE = '''"""KernelBench submission written by kbm: {title}."""
# {name}

import torch

from kbm_toolkit.conformance.model_new import SubmissionRef, bind

_Model, _kernel = bind(SubmissionRef(
{fields}))


class ModelNew(torch.nn.Module):
    """The problem's own Model for its weights; forward runs kbm's kernel on them."""

    def __init__(self, *init_inputs):
        super().__init__()
        # the eval seeds 42 just before this call, as before the reference's: the same weights
        self.reference = _Model(*init_inputs)

    def forward(self, *inputs):
        return _kernel(self.reference, list(inputs))
'''


def submission_source(ref: SubmissionRef) -> str:
    """The text of a KernelBench submission file that runs `ref` (it imports kbm_toolkit)."""
    body = "".join(f"    {k}={v!r},\n" for k, v in asdict(ref).items())
    title = f"mutant {ref.mutant} of {ref.problem_key}" if ref.mutant else f"the correct substrate of {ref.problem_key}"
    return _TEMPLATE.format(title=title, name=" ".join(ref.name.split()), fields=body)


def read_ref(source: str) -> SubmissionRef:
    """The SubmissionRef a submission written by `submission_source` carries (read, not run)."""
    names = {f.name for f in fields(SubmissionRef)}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "SubmissionRef":
            values = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg in names}
            return SubmissionRef(**values)
    raise SubmissionError("not a kbm submission: no SubmissionRef(...) in it")


@lru_cache(maxsize=8)
def _mutants(folder: str, problem_key: str, content_hash: str) -> dict[str, Mutant]:
    # a worker runs many mutants of one substrate: generate them once (keyed by hash, so an edit shows)
    return {m.id: m for m in generate(Substrate(problem_key, Path(folder)), load_rules())}


def _mutant(ref: SubmissionRef, now: str) -> Mutant | None:
    """The mutant `ref` names, a placed one from its site's (`mutation.positions.positioned_id`)."""
    from kbm_toolkit.mutation.positions import positioned_id

    made = _mutants(ref.substrate, ref.problem_key, now)
    if ref.launch is None:
        return made.get(ref.mutant or "")
    return next((m for m in made.values() if positioned_id(m.id, ref.launch) == ref.mutant), None)


def resolve(ref: SubmissionRef) -> tuple[Substrate, str, str | None]:
    """The substrate, the device source to compile, and the mutated launcher (None: the
    substrate's); SubmissionError when the substrate or the mutant is not the store's."""
    substrate = Substrate(ref.problem_key, Path(ref.substrate))
    now = substrate.content_hash
    what = f"mutant {ref.mutant}" if ref.mutant else "the correct substrate"
    if now != ref.substrate_hash:
        raise SubmissionError(f"the substrate has changed since the store evaluated it (content hash {now[:12]}, "
                              f"the store's {ref.substrate_hash[:12]}): refusing to run {what} of {ref.problem_key}",
                              ref.substrate)
    if ref.mutant is None:
        return substrate, substrate.source, None
    mutant = _mutant(ref, now)
    if mutant is None:
        raise SubmissionError(f"kbm's rules no longer make mutant {ref.mutant} of {ref.problem_key}: "
                              "its rule or site changed since the store was made", ref.substrate)
    mutated = mutant.kernel_source if mutant.target == "kernel" else mutant.launcher_source
    if ref.source_hash and hashlib.sha256(mutated.encode()).hexdigest() != ref.source_hash:
        raise SubmissionError(f"mutant {ref.mutant} of {ref.problem_key} rewrites {mutant.file} otherwise than "
                              "the store's mutant row records (source hash differs)", ref.substrate)
    return substrate, mutant.kernel_source, mutant.launcher_source if mutant.target == "launcher" else None


def reference_model(ref: SubmissionRef) -> type:
    """The `Model` class of the submission's problem file, from a fresh namespace."""
    level, _, stem = ref.problem_key.rpartition("/")  # a pack's keys hold two slashes
    number, _, name = stem.partition("_")
    problem = Problem(ref.problem_key, level, int(number), name, Path(ref.problem_path), "kernelbench")
    return problem.load().Model


def bind(ref: SubmissionRef) -> tuple[type, Callable[[Any, list[Any]], Any]]:
    """For a submission being loaded: the problem's `Model` class and `ref`'s kernel, compiled
    for this GPU and ready to run as `kernel(model, inputs)`."""
    from kbm_toolkit.cuda.kernels import LoadedKernel, device_arch
    from kbm_toolkit.cuda.nvrtc import compile_source

    substrate, source, launcher = resolve(ref)
    image = compile_source(source, device_arch(), where=str(substrate.kernel_path))
    original = None
    if ref.launch is not None:  # every other launch runs the substrate's own image
        original = LoadedKernel(substrate, compile_source(substrate.source, device_arch())).kernels
    kernel = LoadedKernel(substrate, image, source, launcher_source=launcher, launch=ref.launch, original=original)
    return reference_model(ref), kernel
