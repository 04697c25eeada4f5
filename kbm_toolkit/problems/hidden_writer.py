"""kbm's suites as KernelBench-Verified hidden test files (`kbm suite --format kbv`).

KBV's eval loads `hidden_tests/level{L}/{id}_hidden.py` with `exec` (torch and `__file__` given),
calls `get_hidden_inputs()`, and runs every config it returns on one reference and one candidate,
both built once from the default `get_init_inputs()`. A file written here rebuilds kbm's input
specs with torch and the standard library alone, bit for bit as `problems.tensors` builds them on
the same device and software, from the copy of the problem beside it in KBV's layout, which it
first checks is, token for token, the file kbm measured. Specs that change the model (re-drawn
parameters, sizes the model is built from) cannot be said in that format: `unexpressible` says
why, from the problem's source alone, and `KbvAdmission` keeps them out of the suite's choice.

Torch-free at import: the emitted files' code is text here, and what kbm itself runs of it (the
token digest) is executed from that same text, so the writer and the files cannot disagree.
"""

from __future__ import annotations

import ast
import json
import symtable
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from kbm_toolkit.errors import KbmError, OutputError, ProblemError
from kbm_toolkit.judging import STRICT
from kbm_toolkit.outputs import output_file, output_folder
from kbm_toolkit.problems.constants import constant_names, override_constants, static_constants
from kbm_toolkit.problems.hidden_tests import HiddenFile, kbv_checkout, parse_hidden, require_hidden
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem

TOLERANCE_ENV = "KB_FP32_TOL"
"""KBV's eval judges fp32 outputs at this atol = rtol when it is set (1e-3 when it is not)."""

KBV_DEFAULT_TOLERANCE = 1e-3

DEVICE_ENV = "KBM_HIDDEN_DEVICE"
"""Where an emitted file builds its tensors; unset: cuda when torch sees one, else the CPU."""

HIDDEN_FOLDER = "hidden_tests"
NOTE_NAME = "KBM_SUITE.md"
_MARK = "written by kbm (`kbm suite --format kbv`)"
"""On the first line of every file written here: an earlier suite's files are replaced, no one else's."""

# The emitted files' code, as text. `_DIGEST_CODE` is also executed here, at import: the digest
# kbm writes into a file is computed by the very function the file runs.
_DIGEST_CODE = '''\
def _code_digest(text):
    """sha256 of a Python source's tokens, leaving out comments, blank lines and line endings.

    An f-string counts as the single string token Python 3.11 makes of it, whichever Python
    tokenizes it (3.12 splits it into parts)."""
    import hashlib
    import io
    import tokenize

    lines = io.StringIO(text).readlines()
    digest = hashlib.sha256()
    depth, start = 0, None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        kind, string = tokenize.tok_name[token.type], token.string
        if kind in ("COMMENT", "NL"):
            continue
        if kind in ("FSTRING_START", "TSTRING_START"):
            start = start if depth else token.start
            depth += 1
            continue
        if depth:
            if kind not in ("FSTRING_END", "TSTRING_END"):
                continue
            depth -= 1
            if depth:
                continue
            (row, col), (end_row, end_col) = start, token.end
            block = lines[row - 1:end_row]
            kind, string = "STRING", "".join(block)[col:len("".join(block[:-1])) + end_col]
        if kind == "NEWLINE":
            string = ""
        digest.update(kind.encode() + b"\\0" + string.encode("utf-8") + b"\\0")
    return digest.hexdigest()
'''

_RUNTIME_CODE = '''\
def _device():
    return os.environ.get(DEVICE_ENV) or ("cuda" if torch.cuda.is_available() else "cpu")


def _here(relative):
    return os.path.join(os.path.dirname(__file__), relative)


def _set_seed(seed):
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def _problem_source():
    """The problem file beside this one in KBV's layout, refused unless its code is kbm's."""
    path = _here(PROBLEM)
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise RuntimeError(f"{path}: cannot read the problem file: {e.strerror}") from None
    found = _code_digest(source)
    if found != PROBLEM_CODE_SHA256:
        raise RuntimeError(f"{path}: not the problem kbm measured this suite on: its code differs, comments "
                           f"and blank lines aside (token sha256 {found[:12]}..., kbm's {PROBLEM_CODE_SHA256[:12]}...)")
    return path, source


def _override_constants(tree, overrides):
    """The module with each overridden constant assigned its new value where it is defined."""
    body = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            body.append(node)
            continue
        pairs = []
        for target in node.targets:
            if (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                    and len(target.elts) == len(node.value.elts)):
                pairs += list(zip(target.elts, node.value.elts))
            else:
                pairs.append((target, node.value))
        if not any(isinstance(t, ast.Name) and t.id in overrides for t, _ in pairs):
            body.append(node)
            continue
        for target, value in pairs:
            if isinstance(target, ast.Name) and target.id in overrides:
                v = overrides[target.id]
                value = ast.Constant(tuple(v) if isinstance(v, list) else v)
            body.append(ast.copy_location(ast.Assign(targets=[target], value=value), node))
    return ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))


def _draw(path, source, shape, seed, device):
    """get_inputs() of the problem run with its size constants overridden, under seed, on device."""
    tree = ast.parse(source, filename=path)
    if shape:
        tree = _override_constants(tree, shape)
    namespace = {"__name__": MODULE_NAME, "__file__": path}
    exec(compile(tree, path, "exec"), namespace)
    _set_seed(seed)
    with torch.device(device):
        values = namespace["get_inputs"]()
    if not isinstance(values, (list, tuple)):
        raise RuntimeError(f"{path}: get_inputs() must return a list, got {type(values).__name__}")
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def _published_config(hidden, seed, device):
    """Config hidden["config"] of KBV's published get_hidden_inputs(), called as kbm calls it."""
    digest = hashlib.sha256(PUBLISHED_SOURCE.encode("utf-8"))
    if PUBLISHED_COPY is not None:
        path = _here(PUBLISHED_COPY)
        try:
            with open(path, "rb") as f:
                digest.update(b"\\0" + f.read())
        except OSError as e:
            raise RuntimeError(f"{path}: cannot read the published hidden test's problem copy: {e.strerror}") from None
    if digest.hexdigest() != hidden["sha256"]:
        raise RuntimeError(f"{__file__}: the published hidden test and its problem copy are not those kbm's input "
                           f"was made from (sha256 {digest.hexdigest()[:12]}..., kbm's {hidden['sha256'][:12]}...)")
    namespace = {"torch": torch, "__file__": __file__, "__builtins__": __builtins__, "__name__": PUBLISHED_NAME}
    exec(compile(PUBLISHED_SOURCE, __file__, "exec"), namespace)
    _set_seed(seed)
    with torch.device(device):
        configs = namespace["get_hidden_inputs"]()
    values = list(configs[hidden["config"]])
    del configs  # the other configs' tensors go now
    return [(v.float() if v.is_floating_point() else v).to(device) if isinstance(v, torch.Tensor) else v
            for v in values]


def _is_float_tensor(value):
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _redraw(spec, value):
    if not _is_float_tensor(value):
        return value
    a, b = spec["params"]
    out = torch.empty_like(value)
    if spec["base"] == "normal":
        return out.normal_(a, b)
    if spec["base"] == "uniform":
        return out.uniform_(a, b)
    # loguniform: |x| = 10**U(log10 a, log10 b), sign +/- with equal odds
    magnitude = torch.pow(10.0, out.uniform_(math.log10(a), math.log10(b)))
    sign = torch.empty_like(value).bernoulli_(0.5).mul_(2).sub_(1)
    return magnitude.mul_(sign)


def _apply(op, p, v):
    if op == "scale":
        return v * p["by"]
    v = v.clone()
    if op == "spike":
        v.select(int(p.get("dim", -1)), int(p.get("index", -1))).fill_(float(p["value"]))
    elif op == "spike_element":
        v.view(-1)[int(p.get("index", -1))] = float(p["value"])
    elif op == "nan_element":
        v.view(-1)[int(p.get("index", -1))] = float("nan")
    elif op == "quantize":
        levels = float(p.get("levels", 4))
        v = torch.round(v * levels) / levels
    elif op == "near_constant":
        v = 1.0 + float(p.get("eps", 1e-4)) * v
    else:
        raise RuntimeError(f"{__file__}: unknown input transform {op!r}")
    return v


def _build(spec, path, source, device):
    """One input spec's tensors, as kbm's problems.tensors.spec_inputs builds them."""
    if spec["base"] == "kbv-hidden":
        values = _published_config(spec["hidden"], spec["seed"], device)
    else:
        values = _draw(path, source, spec["shape"], spec["seed"], device)
    if spec["base"] not in ("official", "kbv-hidden"):
        _set_seed(spec["seed"] ^ 0x5EED)
        values = [_redraw(spec, v) for v in values]
    for transform in spec["transforms"]:
        p = {k: v for k, v in transform.items() if k != "op"}
        target = p.get("input")
        values = [_apply(transform["op"], p, v) if _is_float_tensor(v) and target in (None, i) else v
                  for i, v in enumerate(values)]
    return [v.contiguous() if isinstance(v, torch.Tensor) else v for v in values]


def get_hidden_inputs():
    """One list of inputs per input spec of the suite, in suite order."""
    path, source = _problem_source()
    device = _device()
    return [_build(spec, path, source, device) for spec in SPECS]
'''

_RUNTIME_BASES = {"official", "normal", "uniform", "loguniform", "kbv-hidden"}
_RUNTIME_TRANSFORMS = {"scale", "spike", "spike_element", "nan_element", "quantize", "near_constant"}
"""What `_RUNTIME_CODE` rebuilds; a base or transform kbm adds later is left out until it does."""

_digest_namespace: dict[str, Any] = {}
exec(compile(_DIGEST_CODE, "<kbm hidden test digest>", "exec"), _digest_namespace)


def code_digest(source: str) -> str:
    """sha256 of a problem source's tokens, comments, blank lines and line endings left out: two
    copies that differ only by a header comment have the same digest."""
    return _digest_namespace["_code_digest"](source)


class LeftOut(NamedTuple):
    """A problem or an input the KBV suite leaves out, and why."""

    problem: str
    label: str | None
    """The input's label (its id when it has none); None when the whole problem is left out."""
    reason: str


@dataclass(frozen=True)
class SuiteNote:
    """What every emitted file and the note say about where the suite comes from."""

    store: str
    budget: int
    tolerance: float
    reference: str = STRICT
    detection: str = ""
    """The suite's figure as `kbm suite` prints it, e.g. `99.3% of 452 witnessed mutants (full pool)`."""


@dataclass
class HiddenSuite:
    """What `write_hidden_tests` wrote: the files by problem, the note, and what it left out."""

    folder: Path
    files: dict[str, Path]
    note: Path
    left_out: list[LeftOut]
    warnings: list[str] = field(default_factory=list)
    """Problems whose file will refuse the KBV checkout's copy of them (its code differs from kbm's)."""
    protocol: Path | None = None
    """The same suite's protocol.toml, when it was written beside (`analysis.suite.write_kbv_suite`)."""


def hidden_test_path(problem: Problem) -> str:
    """Where KBV looks for `problem`'s hidden tests, under the folder holding `hidden_tests/`:
    `hidden_tests/level1/19_hidden.py` (a pack's `mybench/level1` is its last part, `level1`)."""
    return f"{HIDDEN_FOLDER}/{_level_folder(problem)}/{problem.number}_hidden.py"


def problem_copy_path(problem: Problem) -> str:
    """Where a KBV hidden test file finds its problem, relative to itself, as KBV's own files do."""
    return f"../../KernelBench/{_level_folder(problem)}/{problem.path.name}"


def _level_folder(problem: Problem) -> str:
    return problem.level.rsplit("/", 1)[-1]


def unexpressible(spec: InputSpec, source: str) -> str | None:
    """Why KBV's harness cannot run `spec` (None when it can), decided from the problem's source
    alone: it builds the reference and the candidate once, from the default `get_init_inputs()`,
    and runs every config on those same instances."""
    if spec.base not in _RUNTIME_BASES:
        return f"base {spec.base!r} is not one kbm's hidden test writer rebuilds"
    if spec.stress:
        return f"{spec.stress} stress beside the launch: KBV's harness runs nothing beside a candidate"
    ops = sorted({op for op, _ in spec.transforms} - _RUNTIME_TRANSFORMS)
    if ops:
        return f"transform {ops[0]!r} is not one kbm's hidden test writer rebuilds"
    if spec.reinit != "default":
        return (f"re-drawn parameters (reinit = {spec.reinit}): KBV's harness builds the model once, "
                "with get_init_inputs()'s weights")
    if not spec.shape:
        return None
    overrides = dict(spec.shape)
    words = ", ".join(f"{k} = {v!r}" for k, v in spec.shape)
    before = static_constants(source)
    if before is None:
        return (f"a shape override ({words}) of a problem whose module constants are not plain arithmetic on "
                "literals: kbm cannot tell whether it changes the model KBV's harness builds once")
    tree = ast.parse(source)
    unknown = sorted(set(overrides) - set(constant_names(tree)))
    if unknown:
        return f"a shape override of {unknown[0]!r}, which is no module constant of the problem"
    after = static_constants(ast.unparse(override_constants(tree, overrides)))
    if after is None:
        return f"a shape override ({words}) kbm cannot follow through the module constants"
    changed = [n for n in before.keys() | after.keys() if repr(before.get(n)) != repr(after.get(n))]
    users = _model_readers(tree, source)
    hits = sorted(n for n in changed if n in users)
    if not hits:
        return None
    source_words = ", ".join(sorted(overrides))
    said = "; ".join(f"{where} reads " + ", ".join(n if n in overrides else f"{n} (computed from {source_words})"
                                                  for n in hits if users[n] == where)
                     for where in sorted({users[n] for n in hits}))
    return (f"the shape override ({words}) changes the model, which KBV's harness builds once, at the default "
            f"sizes: {said}")


def _model_readers(tree: ast.Module, source: str) -> dict[str, str]:
    """Module-level names that `get_init_inputs` or `class Model` read (through the module's own
    functions and classes they use), each with the first of the two that reads it."""
    defs: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.setdefault(node.name, []).append(node)
    tables: dict[str, list[symtable.SymbolTable]] = {}
    for table in symtable.symtable(source, "<problem>", "exec").get_children():
        tables.setdefault(table.get_name(), []).append(table)
    readers: dict[str, str] = {}
    for root, where in (("get_init_inputs", "get_init_inputs()"), ("Model", "class Model")):
        seen: set[str] = set()
        todo = [root]
        while todo:
            name = todo.pop()
            if name in seen or name not in defs:
                continue
            seen.add(name)
            read = set().union(*(_global_reads(t) for t in tables.get(name, [])))
            for node in defs[name]:  # decorators, defaults and bases run in the module's scope
                outside = [*getattr(node, "decorator_list", []), *getattr(node, "bases", []),
                           *getattr(node, "keywords", [])]
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    outside += [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
                read |= {n.id for o in outside for n in ast.walk(o) if isinstance(n, ast.Name)}
            for n in read:
                readers.setdefault(n, where)
                todo.append(n)
    return readers


def _global_reads(table: symtable.SymbolTable) -> set[str]:
    """Names a function's or class's scope, nested scopes included, may read from the module."""
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()}
    for child in table.get_children():
        names |= _global_reads(child)
    return names


class KbvAdmission:
    """The inputs a KBV suite may choose (`analysis.suite`'s `admit`), and a record of those it
    refuses: a problem whose file is not here or is not the one the store measured, an input
    KBV's format cannot express, a kbv-hidden input without the checkout it was made from."""

    def __init__(self, problems: Mapping[str, Problem], rows: Mapping[str, Mapping[str, Any]]) -> None:
        self.problems = dict(problems)
        """The problem files here, by key (what the suite is written from)."""
        self.measured = {k: r.get("source_hash") for k, r in rows.items()}
        """sha256 of each problem file as the store measured it."""
        self.checkout = kbv_checkout()
        self._left_out: list[LeftOut] = []
        self._seen: set[tuple[str, str | None]] = set()
        self._problem_reasons: dict[str, str | None] = {}

    def __call__(self, problem: Problem, spec: InputSpec) -> bool:
        """Whether `spec` of `problem` may be chosen; if not, the reason joins `left_out`."""
        why = self.problem_reason(problem.key)
        if why is not None:
            self.leave_out(problem.key, None, why)
            return False
        why = self.reason(self.problems[problem.key], spec)
        if why is not None:
            self.leave_out(problem.key, spec.label or spec.id, why, spec.id)
            return False
        return True

    def problem_reason(self, key: str) -> str | None:
        """Why none of the problem's inputs can be written (None when they can)."""
        if key not in self._problem_reasons:
            self._problem_reasons[key] = self._problem_reason(key)
        return self._problem_reasons[key]

    def _problem_reason(self, key: str) -> str | None:
        problem = self.problems.get(key)
        if problem is None:
            return ("no problem file here to write its hidden tests from (a KernelBench checkout: --kernelbench PATH "
                    "or KBM_KERNELBENCH)")
        try:
            found = problem.source_hash
        except OSError as e:
            return f"its problem file cannot be read: {e.strerror}"
        if self.measured.get(key) and self.measured[key] != found:
            return (f"the problem file here ({problem.path}) is not the one the store measured "
                    f"(sha256 {found[:12]}..., the store's {self.measured[key][:12]}...)")
        return None

    def reason(self, problem: Problem, spec: InputSpec) -> str | None:
        """Why `spec` cannot be written for `problem` (None when it can)."""
        why = unexpressible(spec, problem.source)
        if why is not None or spec.base != "kbv-hidden":
            return why
        hidden = dict(spec.hidden)
        if self.checkout is None:
            return ("a kbv-hidden input: writing it needs the KernelBench-Verified checkout it was made from "
                    "(--kbv PATH or KBM_KBV)")
        try:
            require_hidden(problem, hidden["sha256"], hidden["config"])
        except ProblemError as e:
            return f"a kbv-hidden input: {e.message}"
        return None

    def leave_out(self, key: str, label: str | None, reason: str, spec_id: str | None = None) -> None:
        """Record a problem (`label` None) or an input left out, once."""
        if (key, spec_id) not in self._seen:
            self._seen.add((key, spec_id))
            self._left_out.append(LeftOut(key, label, reason))

    @property
    def left_out(self) -> list[LeftOut]:
        """The problems and inputs refused so far: by problem, the problem's own line first."""
        return sorted(self._left_out, key=lambda x: (x.problem, x.label is not None, x.label or ""))


def hidden_test_source(problem: Problem, specs: list[InputSpec], note: SuiteNote,
                       published: HiddenFile | None = None) -> str:
    """The text of `problem`'s hidden test file: `get_hidden_inputs()` returns `specs`' inputs, in
    order. `published` is KBV's own file for the problem, which kbv-hidden specs are configs of."""
    if published is None and any(s.base == "kbv-hidden" for s in specs):
        raise KbmError(f"{problem.key}: a kbv-hidden input is written from KBV's published hidden test file: "
                       "give the checkout (--kbv PATH or KBM_KBV)")
    relative = problem_copy_path(problem)
    tol = f"{note.tolerance:g}"
    doc = "\n\n".join([
        f"Hidden inputs for {_words(problem.key)}, {_MARK}.",
        _fill(f"The inputs kbm chose for this problem by greedy set cover over the kill matrix of the store "
              f"{_words(note.store)}, at a budget of {note.budget} per problem. They were measured at "
              f"atol = rtol = {tol} against {_reference_words(note.reference)}. KernelBench-Verified's eval "
              f"judges at {TOLERANCE_ENV} ({KBV_DEFAULT_TOLERANCE:g} when it is unset) against PyTorch's default "
              f"references (cuDNN convolutions in TF32): run it with {TOLERANCE_ENV}={tol} to judge at the "
              "suite's tolerance."),
        "One config per kbm input spec, in order (spec id: label):\n"
        + "\n".join(f"  config {k}: {s.id}: {_words(s.label or s.base)}" for k, s in enumerate(specs, 1)),
        _fill(f"Each config is rebuilt with torch and the standard library alone, bit for bit as kbm builds its "
              f"input spec on the same device and software ({DEVICE_ENV}, else cuda when torch sees one, else "
              f"the CPU). The problem file beside this one in KBV's layout, {relative}, must be, token for "
              "token, the one kbm measured: get_hidden_inputs() refuses any other.")])
    records = "\n".join(f"    {json.dumps(s.record(), sort_keys=True)!r}," for s in specs)
    published_source = published.source if published else None
    published_copy = parse_hidden(published.source, published.path)[1] if published else None
    # the name kbm's problems.tensors runs the published file under
    published_name = f"kbm_hidden_{published.path.parent.name}_{published.path.stem}" if published else ""
    return f'''"""{doc}
"""

import ast
import hashlib
import json
import math
import os

import torch

PROBLEM = {relative!r}
"""kbm's problem, in KBV's layout, relative to this file."""
PROBLEM_CODE_SHA256 = {code_digest(problem.source)!r}
"""sha256 of the tokens of the file kbm measured ({_words(problem.key)}), comments and blank lines aside."""
MODULE_NAME = {f"kbm_problem_{problem.level.replace('/', '_')}_{problem.number}"!r}
DEVICE_ENV = {DEVICE_ENV!r}
SPECS = [json.loads(record) for record in (
{records}
)]
"""kbm's input specs, as records (kbm_toolkit/problems/input_spec.py)."""
PUBLISHED_SOURCE = {published_source!r}
"""KBV's own hidden test file for this problem, whose configs the kbv-hidden specs take (None: no such spec)."""
PUBLISHED_COPY = {published_copy!r}
PUBLISHED_NAME = {published_name!r}


{_DIGEST_CODE}

{_RUNTIME_CODE}'''


def write_hidden_tests(folder: Path, suite: Mapping[str, list[InputSpec]], admission: KbvAdmission,
                       note: SuiteNote) -> HiddenSuite:
    """`folder/hidden_tests/`: one file per problem of `suite` (problem key -> its chosen specs) with
    an input, and `KBM_SUITE.md`. Inputs `admission` refuses are left out (they never are when it
    chose the suite), and a problem with none left gets no file: KBV keeps its own for it."""
    root = output_folder(Path(folder) / HIDDEN_FOLDER)
    files: dict[str, Path] = {}
    warnings: list[str] = []
    taken: dict[str, str] = {}
    for key, specs in suite.items():
        why = admission.problem_reason(key)
        if why is not None:
            admission.leave_out(key, None, why)
            continue
        problem = admission.problems[key]
        kept = [s for s in specs if admission(problem, s)]
        if not kept:
            if not specs:
                admission.leave_out(key, None, "no input of it can be chosen: none that KBV's harness can run is valid "
                                               "and run on every mutant (KBV keeps its own hidden tests for it)")
            continue
        relative = hidden_test_path(problem)
        if relative in taken:
            admission.leave_out(key, None, f"{taken[relative]} is written to the same file, {relative}")
            continue
        taken[relative] = key
        published = None
        if any(s.base == "kbv-hidden" for s in kept):
            hidden = dict(next(s for s in kept if s.base == "kbv-hidden").hidden)
            published, _ = require_hidden(problem, hidden["sha256"], hidden["config"])
        with output_file(Path(folder) / relative) as path:
            path.write_text(hidden_test_source(problem, kept, note, published))
        files[key] = path
        copy = admission.checkout / "KernelBench" / _level_folder(problem) / problem.path.name \
            if admission.checkout else None
        if copy is not None and copy.is_file() and code_digest(copy.read_text()) != code_digest(problem.source):
            warnings.append(f"{key}: the KernelBench-Verified checkout's copy of the problem differs from kbm's in "
                            f"code, so {relative} refuses it there")
    for old in sorted(root.glob("*/*_hidden.py")):  # an earlier suite's file would be copied into KBV with this one
        if old not in files.values() and _written_by_kbm(old):
            try:
                old.unlink()
            except OSError as e:
                raise OutputError(f"cannot remove an earlier suite's file: {e.strerror}", old) from None
    with output_file(root / NOTE_NAME) as path:
        path.write_text(suite_note(note, files, Path(folder), admission.left_out, warnings))
    return HiddenSuite(root, files, path, list(admission.left_out), warnings)


def _written_by_kbm(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return _MARK in f.readline()
    except (OSError, UnicodeDecodeError):
        return False


def suite_note(note: SuiteNote, files: Mapping[str, Path], folder: Path, left_out: list[LeftOut],
               warnings: list[str]) -> str:
    """`KBM_SUITE.md`: where the suite comes from, how to run KBV at its tolerance, what is left out."""
    tol = f"{note.tolerance:g}"
    written = "\n".join(f"- `{p.relative_to(folder / HIDDEN_FOLDER).as_posix()}`: {k}" for k, p in files.items())
    omitted = "\n".join(f"- {x.problem}: " + (f"input {x.label!r}: " if x.label is not None else "") + x.reason
                        for x in left_out)
    figure = f" On that store it detects {note.detection}." if note.detection else ""
    parts = [
        "# A kbm suite as KernelBench-Verified hidden tests",
        _fill(f"Written by `kbm suite --budget {note.budget} --format kbv`: per problem, up to {note.budget} inputs "
              f"chosen by greedy set cover over the kill matrix of the store `{note.store}`, only among the inputs "
              "KernelBench-Verified's harness can run (it builds the reference and the candidate once, from the "
              f"default `get_init_inputs()`, and runs every config on them).{figure}"),
        "## Tolerance and reference",
        _fill(f"The suite was measured at atol = rtol = {tol}, against {_reference_words(note.reference)}. "
              f"KernelBench-Verified's eval judges fp32 outputs at `{TOLERANCE_ENV}` ({KBV_DEFAULT_TOLERANCE:g} "
              "when it is unset) and computes its references with PyTorch's defaults (cuDNN convolutions in TF32, "
              "about 1e-3 relative noise), so on convolution problems its verdicts can differ from kbm's, above "
              "all at tolerances near 1e-3."),
        "## Running it",
        _fill("Copy `hidden_tests/` over the `hidden_tests/` of a KernelBench-Verified checkout (each file "
              "replaces that problem's published one; problems without a file here keep theirs) and run its eval "
              "with hidden tests on, at the suite's tolerance:"),
        f"    {TOLERANCE_ENV}={tol} python scripts/eval_from_generations.py ... use_hidden_tests=True",
        _fill("Each file loads its problem as KBV's own files do (`../../KernelBench/<level>/<file>` from "
              "itself) and refuses, with a one-line error KBV's loader reports, a copy whose code (comments and "
              "blank lines aside) is not the file kbm measured. Its inputs are kbm's input specs rebuilt bit for "
              f"bit on the same device and software (`{DEVICE_ENV}` picks the device; cuda when torch sees one). "
              "KBV's eval still runs its official trials first, and casts every input tensor to its precision, "
              "integer ones too (kbm keeps their dtype)."),
        "## Files", written or "(none)",
        "## Left out", omitted or "(nothing)"]
    if warnings:
        parts += ["## Cautions", "\n".join(f"- {w}" for w in warnings)]
    return "\n\n".join(parts) + "\n"


def _reference_words(reference: str) -> str:
    return ("strict-fp32 references (IEEE fp32: no TF32 in cuDNN convolutions or cuBLAS matmuls)"
            if reference == STRICT else f"{reference} references")


def _fill(text: str) -> str:
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def _words(text: str) -> str:
    """Text safe inside a docstring, on one line."""
    return " ".join(str(text).replace("\\", "/").replace('"""', "'''").split())

