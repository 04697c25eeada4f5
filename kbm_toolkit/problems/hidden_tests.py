"""KernelBench-Verified's published hidden tests, read from a checkout without running them.

KBV publishes `hidden_tests/level{L}/{id}_hidden.py` per problem: `get_hidden_inputs()` returns a
list of input configs, each the problem's own `get_inputs()` called afresh (from KBV's copy of the
problem file, `../../KernelBench/level{L}/...` beside it), floats scaled by 1, 3, 0.01 or -1, as
`scripts/generate_hidden_inputs.py` writes them. Configs whose reference failed at generation are
left out of the file and logged in `hidden_tests/filtered_configs.json`; a config that file names
is dropped here too. The checkout is found through `KBM_KBV` (`kbm --kbv PATH` sets it), so no
record names a path. Torch is not needed: building the tensors is `problems.tensors`' part.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbm_toolkit.errors import MissingCheckout, ProblemError
from kbm_toolkit.problems.problem import Problem

KBV_ENV = "KBM_KBV"
"""The environment variable naming a KernelBench-Verified checkout (set by `kbm --kbv PATH`)."""

FILTERED = "filtered_configs.json"
"""Under `hidden_tests/`: the configs KBV's generator dropped, `[{"level", "pid", "dist_id", ...}]`."""

_LABEL = re.compile(r"^\s*#\s*(D\d+):\s*(.*?)\s*$")
_KERNELBENCH_LEVEL = re.compile(r"level\d+")


@dataclass(frozen=True)
class HiddenConfig:
    """One config of `get_hidden_inputs()`, as its source says."""

    index: int
    """Its position in the list `get_hidden_inputs()` returns (0-based)."""
    dist_id: str
    """KBV's name for its distribution (`D2`), "" when the source has no `# D2: ...` comment."""
    words: str
    """The comment's words (`x3 large magnitude`)."""
    calls: tuple[int, ...] | None
    """Which `_get_inputs()` calls (0-based, in call order) its tensors come from, when every
    config before it is a plain one-call config; None: only the plain full call can build it."""

    @property
    def label(self) -> str:
        """The spec label: `hidden D2: x3 large magnitude`."""
        return f"hidden {self.dist_id}: {self.words}" if self.dist_id else f"hidden config {self.index + 1}"


@dataclass(frozen=True)
class HiddenFile:
    """A problem's hidden test file in a checkout, parsed."""

    path: Path
    source: str
    problem_copy: Path | None
    """KBV's copy of the problem file that `_get_inputs()` loads (None when the source does not say)."""
    sha256: str
    """sha256 of the hidden file and then its problem copy: an edit to either is a new input."""
    configs: tuple[HiddenConfig, ...]
    """Every config the file returns, in order."""
    filtered: frozenset[str]
    """Distribution ids `filtered_configs.json` drops for this problem."""

    @property
    def kept(self) -> list[HiddenConfig]:
        """The configs a KBV check runs: all but those `filtered_configs.json` drops."""
        return [c for c in self.configs if not (c.dist_id and c.dist_id in self.filtered)]


def kbv_checkout() -> Path | None:
    """The KernelBench-Verified checkout `KBM_KBV` names, or None when it is unset; ProblemError
    when it names a folder with no `hidden_tests/`."""
    value = os.environ.get(KBV_ENV)
    if not value:
        return None
    path = Path(value).expanduser()
    if not (path / "hidden_tests").is_dir():
        raise ProblemError(f"{KBV_ENV} names no KernelBench-Verified checkout (no hidden_tests/ folder there)", path)
    return path.resolve()


def hidden_file(checkout: Path, problem: Problem) -> Path:
    """Where KBV keeps `problem`'s hidden tests: `hidden_tests/level{L}/{id}_hidden.py` (may not exist)."""
    return Path(checkout) / "hidden_tests" / problem.level / f"{problem.number}_hidden.py"


def read_hidden(checkout: Path, problem: Problem) -> HiddenFile | None:
    """`problem`'s hidden tests in `checkout`, parsed without running them; None when KBV has none
    for it (its eval then runs the official trials alone). ProblemError when the file is malformed
    or loads a problem file other than this one."""
    path = hidden_file(checkout, problem)
    if not _KERNELBENCH_LEVEL.fullmatch(problem.level) or not path.is_file():  # a pack's `mybench/level1` is not KBV's
        return None
    data = path.read_bytes()
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProblemError(f"not UTF-8 text: {e}", path) from None
    configs, relative = parse_hidden(source, path)
    copy = (path.parent / relative).resolve() if relative else None
    if copy is not None and (copy.stem, copy.parent.name) != (problem.key.rsplit("/", 1)[-1], problem.level):
        raise ProblemError(f"loads {copy.parent.name}/{copy.name}, not kbm's {problem.key}", path)
    digest = hashlib.sha256(data)
    if copy is not None:
        try:
            digest.update(b"\0" + copy.read_bytes())
        except OSError as e:
            raise ProblemError(f"its problem copy {relative} cannot be read: {e.strerror}", path) from None
    return HiddenFile(path, source, copy, digest.hexdigest(), tuple(configs), filtered_configs(checkout, problem))


def require_hidden(problem: Problem, sha256: str, index: int) -> tuple[HiddenFile, HiddenConfig]:
    """The hidden file and config a kbv-hidden spec names, from the `KBM_KBV` checkout; a one-line
    ProblemError when there is no checkout, no file, or the file is not the one the spec hashed."""
    checkout = kbv_checkout()
    if checkout is None:
        raise MissingCheckout(f"{problem.key}: a kbv-hidden input needs a KernelBench-Verified checkout "
                           f"(--kbv PATH or {KBV_ENV})")
    tests = read_hidden(checkout, problem)
    if tests is None:
        raise ProblemError(f"{problem.key}: no hidden test file in the KernelBench-Verified checkout",
                           hidden_file(checkout, problem))
    if tests.sha256 != sha256:
        raise ProblemError(f"the hidden test file (or its problem copy) is not the one this input was made from "
                           f"(sha256 {tests.sha256[:12]}…, the spec names {sha256[:12]}…)", tests.path)
    if index >= len(tests.configs):
        raise ProblemError(f"no config {index}: get_hidden_inputs() returns {len(tests.configs)}", tests.path)
    return tests, tests.configs[index]


def filtered_configs(checkout: Path, problem: Problem) -> frozenset[str]:
    """The distribution ids (`D4`) `hidden_tests/filtered_configs.json` lists for `problem`, in the
    format KBV's generator writes (a list of {"level", "pid", "dist_id", ...}); empty without it."""
    path = Path(checkout) / "hidden_tests" / FILTERED
    if not path.is_file():
        return frozenset()
    try:
        entries = json.loads(path.read_text())
        if not isinstance(entries, list):
            raise ValueError("not a list")
        level = problem.level.removeprefix("level")
        return frozenset(str(e["dist_id"]) for e in entries
                         if str(e["level"]) == level and int(e["pid"]) == problem.number)
    except (ValueError, TypeError, KeyError) as e:
        raise ProblemError(f"not a list of {{level, pid, dist_id}} entries: {type(e).__name__}: {e}", path) from None


def parse_hidden(source: str, where: str | Path) -> tuple[list[HiddenConfig], str | None]:
    """The configs `get_hidden_inputs()` returns, read from its source, and the problem copy it
    loads (relative to the file). Counted as its top-level `configs.append(...)` calls; labelled by
    the `# D1: ...` comment before each."""
    try:
        tree = ast.parse(source, filename=str(where))
    except SyntaxError as e:
        raise ProblemError(f"syntax error: {e.msg}", f"{where}:{e.lineno}") from None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_hidden_inputs"), None)
    if fn is None:
        raise ProblemError("no get_hidden_inputs() function: not a KernelBench-Verified hidden test file", where)
    name = _returned_name(fn)
    lines = source.splitlines()
    configs: list[HiddenConfig] = []
    calls = 0          # _get_inputs() calls made before the current statement
    plain = True       # every config so far is one plain call: later ones can be built alone
    since = fn.lineno  # the comment labelling a config sits after the previous config's statement
    segment: list[ast.stmt] = []
    for stmt in fn.body:
        appends = [n for n in ast.walk(stmt) if _is_append(n, name)]
        if appends and not (isinstance(stmt, ast.Expr) and stmt.value is appends[0] and len(appends) == 1):
            raise ProblemError(f"line {stmt.lineno}: get_hidden_inputs() appends a config inside another "
                               "statement: kbm cannot count its configs without running it", where)
        segment.append(stmt)
        if not appends:
            continue
        made = sum(_count_calls(s) for s in segment)
        label = next((m.groups() for m in (_LABEL.match(line) for line in reversed(lines[since:stmt.lineno]))
                      if m), ("", ""))
        configs.append(HiddenConfig(len(configs), label[0], label[1],
                                    tuple(range(calls, calls + made)) if plain and made else None))
        plain = plain and _is_plain(segment, name)
        calls += made
        since, segment = stmt.end_lineno or stmt.lineno, []
    if not configs:
        raise ProblemError(f"get_hidden_inputs() appends no config to {name!r}", where)
    return configs, _problem_copy(tree)


def _returned_name(fn: ast.FunctionDef) -> str:
    """The list get_hidden_inputs() returns (`configs` in every generated file)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            return node.value.id
    return "configs"


def _is_append(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == name)


def _is_draw(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_get_inputs"


def _count_calls(stmt: ast.stmt) -> int:
    return sum(_is_draw(n) for n in ast.walk(stmt))


def _is_plain(segment: list[ast.stmt], name: str) -> bool:
    """Whether a config is the generator's own form: `configs.append(_get_inputs())` or
    `configs.append(_scale(_get_inputs(), FACTOR))`, beside statements that call nothing. Only
    then does handing it shadows instead of tensors leave the RNG where the plain call leaves it."""
    *rest, last = segment
    if any(isinstance(n, ast.Call) for s in rest for n in ast.walk(s)):
        return False
    arg = last.value.args[0] if isinstance(last, ast.Expr) and _is_append(last.value, name) and \
        len(last.value.args) == 1 else None
    if _is_draw(arg):
        return not arg.args
    return (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "_scale"
            and len(arg.args) == 2 and _is_draw(arg.args[0]) and not arg.args[0].args
            and _is_number(arg.args[1]))


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))


def _problem_copy(tree: ast.Module) -> str | None:
    """The `.py` path `_PROB_PATH` joins to the file's folder (`../../KernelBench/level1/19_ReLU.py`)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_PROB_PATH" for t in node.targets):
            found: list[Any] = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                                and isinstance(n.value, str) and n.value.endswith(".py")]
            return found[0] if found else None
    return None
