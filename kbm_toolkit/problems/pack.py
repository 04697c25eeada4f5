"""Benchmark packs: a benchmark's problems, substrates, protocols and rules in one folder.

```
mybench/
  bench.toml                              [bench] name = "mybench", description = "one line"
  problems/<level>/<id>_<Name>.py         KernelBench format: Model, get_inputs, get_init_inputs
  substrates/<level>/<id>_<Name>/         kernel.cu and launch.py (substrates/README.md)
  adapters/<name>/protocol.toml           optional: protocols (protocols/protocol.py)
  rules/*.toml                            optional: mutation rules (mutation/rules.py)
```

A pack's problem keys carry its name: `mybench/level1/1_MyRelu`, of level `mybench/level1`. kbm's
own problems load the same way, as packs without a prefix: `demo` (problems/demo and its
substrates) and, given a checkout, `kernelbench` (its level1..3, with kbm's substrates for them).
Packs are named by `--bench`, `KBM_BENCH` (a path list) and the entry-point group
`kbm.benchmarks`. This layer only reports a pack's folders: `mutation.rules` and
`protocols.registry` ask `user_packs()` for the rule files and adapters they add.
"""

from __future__ import annotations

import os
import re
import shutil
import string
from dataclasses import dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Iterable, Iterator

from kbm_toolkit.errors import KbmError, OutputError, ProblemError
from kbm_toolkit.paths import data_dir
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.tomlfile import load_toml

MANIFEST = "bench.toml"
BENCH_ENV = "KBM_BENCH"
"""Packs to load, an os.pathsep-separated list of folders; `--bench` adds to it."""
GROUP = "kbm.benchmarks"
"""Entry points naming a callable that returns a pack's folder."""

LEVELS_IN_SCOPE = ("level1", "level2", "level3")
"""KernelBench level 4 downloads model weights at run time: out of scope."""

BUILT_IN = ("demo", "kernelbench")
"""kbm's own packs: a plug-in of either name is refused, as a plug-in adapter named like kbm's is."""

_RESERVED = {*BUILT_IN, "builtin", "kbm", "kbv", "fuzz"}
"""kbm's packs and adapters (init-bench names a pack's protocol after it) and the word old stores use."""
_RESERVED_PATTERN = re.compile(r"^level\d+$")
"""A pack named `level1` would give keys that read as KernelBench's."""
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_FILE_RE = re.compile(r"^(\d+)_(.+)\.py$")
_MANIFEST_KEYS = {"name", "description"}
_TEMPLATE = "pack_template"


class PackError(KbmError):
    """A pack is malformed (its manifest, its layout) or clashes with another: names the file and why."""


@dataclass(frozen=True)
class Pack:
    """One benchmark's folder: where its problems, substrates, adapters and rules are, and its keys' prefix."""

    name: str
    description: str
    root: Path
    problems: Path
    substrates: Path
    adapters: Path | None = None
    rules: Path | None = None
    prefix: str = ""
    """Put before every level: `mybench/` for a pack, `` for kbm's own (their keys stay `level1/…`, `demo/…`)."""
    levels: tuple[str, ...] | None = None
    """The level folders read (None: every one); KernelBench's level 4 is left out."""

    @property
    def manifest(self) -> Path:
        """The pack's `bench.toml`."""
        return self.root / MANIFEST

    def substrate_folder(self, level: str, stem: str) -> Path:
        """Where the substrate of problem `<level>/<stem>` of this pack lives (level without the prefix)."""
        return self.substrates / level / stem

    def problem_files(self) -> Iterator[tuple[str, int, str, Path]]:
        """(level folder, id, name, path) of every problem file, levels in name order."""
        if not self.problems.is_dir():
            return
        for level_dir in sorted(p for p in self.problems.iterdir() if p.is_dir() and p.name[0] not in "._"):
            if self.levels is not None and level_dir.name not in self.levels:
                continue
            for path in sorted(level_dir.glob("*.py")):
                m = _FILE_RE.match(path.name)
                if m:
                    yield level_dir.name, int(m.group(1)), m.group(2), path

    def load_problems(self) -> dict[str, Problem]:
        """The pack's problems by key; each knows its substrate folder, here or in a worker."""
        found = {}
        for level_dir, number, name, path in self.problem_files():
            level, stem = self.prefix + level_dir, f"{number}_{name}"
            found[f"{level}/{stem}"] = Problem(f"{level}/{stem}", level, number, name, path, self.name,
                                               substrate_dir=self.substrate_folder(level_dir, stem))
        return found

    def rule_files(self) -> list[Path]:
        """The pack's `rules/*.toml`, in name order."""
        return sorted(self.rules.glob("*.toml")) if self.rules and self.rules.is_dir() else []

    def adapter_folders(self) -> list[Path]:
        """The pack's `adapters/<name>/` folders, in name order."""
        if not self.adapters or not self.adapters.is_dir():
            return []
        return sorted(p for p in self.adapters.iterdir() if p.is_dir() and p.name[0] not in "._")


def demo_pack() -> Pack:
    """kbm's own problems (`demo/…`) and their substrates."""
    problems = data_dir("problems")
    return Pack("demo", "kbm's built-in problems", problems.parent, problems, data_dir("substrates"))


def kernelbench_pack(checkout: str | Path) -> Pack:
    """A KernelBench checkout's levels 1-3 (`level1/…`), with kbm's substrates for them."""
    root = kernelbench_root(Path(checkout))
    return Pack("kernelbench", f"KernelBench at {checkout}", Path(checkout), root, data_dir("substrates"),
                levels=LEVELS_IN_SCOPE)


def kernelbench_root(checkout: Path) -> Path:
    """The folder holding `level1/`…: the checkout's `KernelBench/`, or the path itself."""
    for candidate in (checkout / "KernelBench", checkout):
        if (candidate / "level1").is_dir():
            return candidate
    raise ProblemError("not a KernelBench checkout: no KernelBench/level1 folder", checkout)


def check_name(name: object, where: Path) -> str:
    """`name` if a pack may take it; PackError naming `where` otherwise."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise PackError(f"[bench] name must be lower-case letters, digits, '-' or '_', got {name!r}", where)
    if name in _RESERVED or _RESERVED_PATTERN.match(name):
        raise PackError(f"[bench] name {name!r} is reserved (kbm's own packs and levels use it): choose another",
                        where)
    return name


def load_pack(path: str | Path) -> Pack:
    """The pack in folder `path` (or named by its `bench.toml`), its manifest and layout checked."""
    root = Path(path).expanduser().absolute()
    if root.name == MANIFEST and root.is_file():
        root = root.parent
    if not root.is_dir():
        raise PackError("no such folder: a benchmark pack is a folder with a bench.toml", root)
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise PackError(f"no {MANIFEST}: a benchmark pack needs one ([bench] name = \"...\")", root)
    try:
        data = load_toml(manifest)
    except KbmError as e:
        raise PackError(e.message, e.where) from None
    table = data.get("bench")
    if set(data) - {"bench"} or not isinstance(table, dict):
        raise PackError("a manifest holds one [bench] table (name, description)", manifest)
    unknown = sorted(set(table) - _MANIFEST_KEYS)
    if unknown:
        raise PackError(f"unknown key {unknown[0]!r} in [bench] (known: description, name)", manifest)
    name = check_name(table.get("name"), manifest)
    description = table.get("description", "")
    if not isinstance(description, str):
        raise PackError("[bench] description must be a string", manifest)
    pack = Pack(name, description, root, root / "problems", root / "substrates", root / "adapters", root / "rules",
                prefix=f"{name}/")
    _check_layout(pack)
    return pack


def _check_layout(pack: Pack) -> None:
    """PackError for the first thing out of place: no problems folder, an orphan or incomplete
    substrate, an adapter folder without protocol.toml."""
    if not pack.problems.is_dir():
        raise PackError("no problems/ folder (problems/<level>/<id>_<Name>.py)", pack.root)
    stems = {(level, f"{number}_{name}") for level, number, name, _ in pack.problem_files()}
    if pack.substrates.is_dir():
        for level_dir in sorted(p for p in pack.substrates.iterdir() if p.is_dir() and p.name[0] not in "._"):
            for folder in sorted(p for p in level_dir.iterdir() if p.is_dir() and p.name[0] not in "._"):
                if (level_dir.name, folder.name) not in stems:
                    raise PackError(f"a substrate with no problem: there is no problems/{level_dir.name}/"
                                    f"{folder.name}.py", folder)
                for file in ("kernel.cu", "launch.py"):
                    if not (folder / file).is_file():
                        raise PackError(f"substrate is missing {file}", folder)
    for folder in pack.adapter_folders():
        if not (folder / "protocol.toml").is_file():
            raise PackError("an adapter folder without protocol.toml", folder)


def discover_packs(paths: Iterable[str | Path]) -> list[Pack]:
    """The packs in `paths`, each folder once; PackError when two take the same name."""
    packs: list[Pack] = []
    for path in paths:
        pack = load_pack(path)
        if any(p.root.resolve() == pack.root.resolve() for p in packs):
            continue
        other = next((p for p in packs if p.name == pack.name), None)
        if other is not None:
            raise PackError(f"pack name {pack.name!r} is taken by the pack at {other.root}: rename one",
                            pack.manifest)
        packs.append(pack)
    return packs


def bench_paths() -> list[Path]:
    """The folders `KBM_BENCH` names."""
    return [Path(p) for p in os.environ.get(BENCH_ENV, "").split(os.pathsep) if p.strip()]


def use_benches(paths: Iterable[str | Path]) -> None:
    """Add `paths` to `KBM_BENCH`: every later lookup here, and the processes kbm starts
    (compiling, GPU workers), then load the same packs."""
    added = [str(Path(p).expanduser().absolute()) for p in paths]
    if not added:
        return
    current = [str(p) for p in bench_paths()]
    os.environ[BENCH_ENV] = os.pathsep.join([*current, *[p for p in added if p not in current]])


def _plugins() -> tuple[list[EntryPoint], list[EntryPoint]]:
    """The `kbm.benchmarks` entry points, and those refused for a built-in pack's name."""
    found, refused = [], []
    for ep in entry_points(group=GROUP):
        (refused if ep.name in BUILT_IN else found).append(ep)
    return found, refused


def refused_plugins() -> dict[str, str]:
    """Plug-ins refused for their name (a built-in pack's): name → the line saying so; loads none."""
    return {ep.name: f"benchmark {ep.name!r} ({ep.value}) is named like kbm's built-in pack {ep.name!r}, which it "
                     "would replace: it is not loaded; rename its entry point"
            for ep in _plugins()[1]}


def plugin_folders() -> list[Path]:
    """The folder each `kbm.benchmarks` plug-in names (its callable's return value)."""
    folders = []
    for ep in _plugins()[0]:
        try:
            folders.append(Path(ep.load()()))
        except Exception as e:  # a third-party plug-in that breaks on import
            raise PackError(f"benchmark {ep.name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}") from e
    return folders


def user_packs() -> list[Pack]:
    """The packs beside kbm's own: plug-ins (`kbm.benchmarks`), then `KBM_BENCH` (and `--bench`)."""
    return discover_packs([*plugin_folders(), *bench_paths()])


def builtin_packs(kernelbench: str | Path | None = None) -> list[Pack]:
    """kbm's own packs: `demo`, and `kernelbench` when a checkout is given (or `KBM_KERNELBENCH` set)."""
    checkout = kernelbench or os.environ.get("KBM_KERNELBENCH")
    return [demo_pack(), *([kernelbench_pack(checkout)] if checkout else [])]


def locate_substrate(problem: Problem, packs: Iterable[Pack] | None = None) -> Problem:
    """`problem` (read back from a store row, say) with its pack's substrate folder, when its
    origin names one of `packs` (default: `user_packs()`); else as it is."""
    if problem.substrate_dir is not None:
        return problem
    for pack in user_packs() if packs is None else packs:
        if pack.name == problem.origin and problem.level.startswith(pack.prefix):
            folder = pack.substrate_folder(problem.level[len(pack.prefix):], f"{problem.number}_{problem.name}")
            return replace(problem, substrate_dir=folder)
    return problem


def init_pack(folder: str | Path, name: str | None = None, taken: Iterable[str] = ()) -> Pack:
    """Write a new pack into `folder` (new or empty): one problem, its substrate, one protocol named
    like the pack, which may not be one of `taken` (the installed protocols' names)."""
    folder = Path(folder).expanduser().absolute()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise PackError("not an empty folder: init-bench writes a new pack into a new or empty one", folder)
    if name is None and not _NAME.match(folder.name.lower()):
        raise PackError(f"cannot name the pack after its folder {folder.name!r}: give --name", folder)
    name = check_name(name if name is not None else folder.name.lower(), folder / MANIFEST)
    if name in set(taken):  # its protocol would clash at the next command, once the pack loads
        raise PackError(f"pack name {name!r} is an installed protocol's, which the pack's own protocol would "
                        "take: give another --name", folder / MANIFEST)
    template = data_dir(_TEMPLATE)
    values = {"name": name}
    try:
        for source in sorted(p for p in template.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            target = folder / str(source.relative_to(template)).replace("__name__", name)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.suffix in (".toml", ".md"):
                target.write_text(string.Template(source.read_text()).substitute(values))
            else:
                shutil.copyfile(source, target)
    except OSError as e:
        raise OutputError(f"cannot write the pack: {e.strerror}", e.filename or folder) from None
    return load_pack(folder)
