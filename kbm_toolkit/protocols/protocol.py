"""Protocols: what a benchmark's checker does — input specs per problem, and a tolerance.

A protocol is declared in a `protocol.toml` (an adapter folder holds one, with any Python it
names beside it):

```toml
[protocol]
name = "kbv"
description = "one line"
tolerance = 1e-3                   # atol = rtol, as KernelBench's allclose uses them; or:
atol = 1e-5                        #   atol and rtol apart
rtol = 1e-3
comparison = "allclose"            # allclose (|d| <= atol + rtol|out|) | assert_close (rtol x |ref|;
                                   #   dtype defaults without atol/rtol) | absolute (rtol = 0)
reference = "pytorch-default"      # how the benchmark computes its reference: strict-fp32 (kbm's
                                   #   default) or pytorch-default (TF32 cuDNN convolutions)
drop_nonfinite_reference = true    # inputs whose reference raises or is non-finite are dropped
exclude = ["level2/23"]            # problems the protocol does not check
module = "extra.py"                # optional: a Python hook adding specs ...
function = "more_specs"            # ... called as f(problem, constants, config) -> [records]; the
                                   #   module may define describe(config) -> str | None, the audit's
                                   #   first words about the protocol (Protocol.note)
[protocol.config]                  # passed to the hook
values = [1, 3]

[[inputs]]                         # each table expands to specs for every problem
trials = 5                         # KernelBench's official trial seeds 0..4 (or seed_index = k,
seed_offset = 0                    #   or seed = literal); seed_offset shifts the index
base = "official"                  # official | normal | uniform | loguniform, with params = [a, b]
transforms = [{ op = "scale", by = -1.0 }]
shape = { dim = 1001 }
reinit = "default"
hidden = { config = 1, sha256 = "..." }   # base = "kbv-hidden" only (input_spec.py)
stress = "memory"                  # every mutant launch on these inputs beside memory stress
label = "official trial {index}"
problem = "level1/23_Softmax"      # optional: this table applies to one problem only

[[variant]]                        # a protocol derived from this one: any [protocol] key, renamed
name = "kbv-tight"
tolerance = 1e-4
```
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kbm_toolkit.errors import KbmError
from kbm_toolkit.judging import Judging, judging_from_table
from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.tomlfile import load_toml, loads_toml

_PROTOCOL_KEYS = {"name", "description", "tolerance", "atol", "rtol", "comparison", "dtype", "reference",
                  "drop_nonfinite_reference", "exclude", "module", "function", "config"}
_INPUT_KEYS = {"trials", "seed_index", "seed", "seed_offset", "base", "params", "transforms", "shape",
               "reinit", "label", "problem", "hidden", "stress"}


class ProtocolError(KbmError):
    """A protocol file is malformed: names the file, the key and the reason."""


@dataclass(frozen=True)
class Protocol:
    """A named checker: input specs per problem, and how outputs on them are judged."""

    name: str
    description: str
    tolerance: float
    """atol: with `judging`'s ratio, what a margin is compared against (atol = rtol for most)."""
    inputs: tuple[dict[str, Any], ...]
    drop_nonfinite_reference: bool = False
    exclude: tuple[str, ...] = ()
    hook: Callable[..., list[dict[str, Any]]] | None = field(default=None, compare=False)
    config: dict[str, Any] = field(default_factory=dict, compare=False)
    path: str = ""
    judging: Judging | None = None
    """The reference and comparison; None: allclose at atol = rtol = tolerance, strict fp32."""
    note: str = ""
    """What the audit says first about the protocol (its hook module's `describe(config)`), or ""."""
    _specs: dict[tuple[str, str], list[InputSpec]] = field(default_factory=dict, compare=False, repr=False)
    """specs() per problem: scoring asks for every problem under every protocol, often repeatedly."""

    @property
    def judge(self) -> Judging:
        """How this protocol judges an output (its `judging`, else allclose at `tolerance`)."""
        return self.judging or Judging(self.tolerance, self.tolerance)

    def applies_to(self, problem: Problem) -> bool:
        """Whether the protocol checks `problem` (`exclude` takes keys or `level/id`)."""
        return not any(problem.key == e or f"{problem.level}/{problem.number}" == e for e in self.exclude)

    def specs(self, problem: Problem) -> list[InputSpec]:
        """The protocol's input specs for `problem`, in order, without duplicates."""
        key = (problem.key, str(problem.path))
        if key not in self._specs:
            self._specs[key] = self._make_specs(problem)
        return list(self._specs[key])

    def _make_specs(self, problem: Problem) -> list[InputSpec]:
        if not self.applies_to(problem):
            return []
        records: list[dict[str, Any]] = []
        for entry in self.inputs:
            if entry.get("problem", problem.key) == problem.key:
                records += _expand(entry)
        if self.hook is not None:  # only hooks need the problem file itself, and only those that read constants
            constants = _Constants(problem)
            for extra in self.hook(problem, constants, self.config):
                records.append({"seed_index": self.config.get("seed_index", 0), **extra})
        if not records:
            return []
        seeds = trial_seeds(1 + max(r.get("seed_index", 0) for r in records))
        specs, seen = [], set()
        for r in records:
            seed = r["seed"] if "seed" in r else seeds[r.get("seed_index", 0)]
            spec = InputSpec.make(problem.key, seed, r.get("base", "official"), tuple(r.get("params", ())),
                                  list(r.get("transforms", [])), dict(r.get("shape", {})),
                                  r.get("reinit", "default"), r.get("label", self.name), r.get("hidden"),
                                  r.get("stress", ""))
            if spec.id not in seen:
                seen.add(spec.id)
                specs.append(spec)
        return specs


class _Constants(Mapping[str, Any]):
    """A problem's module constants, read on first use: a hook that never looks at them (kbv's)
    needs neither the problem file nor, where the constants are not plain literals, torch."""

    def __init__(self, problem: Problem) -> None:
        self._problem = problem

    @functools.cached_property
    def _values(self) -> dict[str, Any]:
        return self._problem.constants()

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _expand(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """One [[inputs]] table → spec records; `trials = n` gives n records, one per trial seed."""
    offset = entry.get("seed_offset", 0)
    if "trials" in entry:
        indices = list(range(entry["trials"]))
    else:
        indices = [entry.get("seed_index", 0)]
    out = []
    for i in indices:
        record = {k: v for k, v in entry.items() if k not in ("trials", "seed_offset", "label", "seed_index", "problem")}
        if "seed" not in entry:
            record["seed_index"] = offset + i
        record["label"] = entry.get("label", "input {index}").format(index=i)
        out.append(record)
    return out


def load_protocols(path: Path) -> list[Protocol]:
    """The protocol in `path` (a folder with protocol.toml, or the .toml itself) and its variants."""
    toml = _protocol_file(path)
    if not toml.is_file():
        raise ProtocolError("no protocol.toml here", path)
    return _from_data(load_toml(toml), toml)


def _protocol_file(path: Path) -> Path:
    """The protocol.toml a protocol path names: the folder's, or the file itself."""
    path = Path(path)
    return path / "protocol.toml" if path.is_dir() else path


def storable_toml(path: Path) -> str | None:
    """The protocol.toml text of the protocol at `path`, for a store to keep (`stored_protocol`
    loads it back); None where it runs a module, whose Python file a store cannot hold."""
    toml = _protocol_file(path)
    text = toml.read_text()
    data = loads_toml(text, toml)
    tables = [data.get("protocol", {}), *data.get("variant", [])]
    return None if any(isinstance(t, dict) and "module" in t for t in tables) else text


def stored_protocol(name: str, text: str) -> Protocol:
    """Protocol `name` (or its variant of that name) from the protocol.toml text a store keeps."""
    where = Path(f"the store's protocol {name}")
    for protocol in _from_data(loads_toml(text, where), where):
        if protocol.name == name:
            return protocol
    raise ProtocolError(f"holds no protocol named {name!r}", where)


def _from_data(data: dict[str, Any], toml: Path) -> list[Protocol]:
    """A parsed protocol.toml's protocol and its variants; errors name `toml`."""
    unknown = set(data) - {"protocol", "inputs", "variant"}
    if unknown:
        raise ProtocolError(f"unknown top-level key {sorted(unknown)[0]!r}", toml)
    base = data.get("protocol")
    if not isinstance(base, dict):
        raise ProtocolError("missing [protocol] table", toml)
    inputs = data.get("inputs", [])
    if not isinstance(inputs, list) or not all(isinstance(e, dict) for e in inputs):
        raise ProtocolError("inputs must be [[inputs]] tables", toml)
    for i, entry in enumerate(inputs):
        _check_inputs(entry, toml, i)
    protocols = [_protocol(base, inputs, toml)]
    for variant in data.get("variant", []):
        if not isinstance(variant, dict) or "name" not in variant:
            raise ProtocolError("every [[variant]] needs a name", toml)
        inherited = {k: v for k, v in base.items() if not ("tolerance" in variant and k in ("atol", "rtol"))}
        protocols.append(_protocol({**inherited, **variant}, inputs, toml))  # a variant's tolerance is both
    return protocols


def _check_inputs(entry: dict[str, Any], toml: Path, index: int) -> None:
    where = f"inputs #{index + 1}"
    unknown = set(entry) - _INPUT_KEYS
    if unknown:
        raise ProtocolError(f"{where}: unknown key {sorted(unknown)[0]!r}", toml)
    for key in ("trials", "seed_index", "seed", "seed_offset"):
        if key in entry and (not isinstance(entry[key], int) or entry[key] < 0):
            raise ProtocolError(f"{where}: {key} must be a non-negative integer", toml)
    try:  # build one spec now, so a bad base, transform or reinit is reported with the file
        r = _expand(entry)[0]
        InputSpec.make("check", r.get("seed", 0), r.get("base", "official"), tuple(r.get("params", ())),
                       list(r.get("transforms", [])), dict(r.get("shape", {})), r.get("reinit", "default"),
                       hidden=r.get("hidden"), stress=r.get("stress", ""))
    except KbmError as e:
        raise ProtocolError(f"{where}: {e.message}", toml) from None
    except (TypeError, KeyError, ValueError) as e:
        raise ProtocolError(f"{where}: {type(e).__name__}: {e}", toml) from None


def _protocol(table: dict[str, Any], inputs: list[dict[str, Any]], toml: Path) -> Protocol:
    unknown = set(table) - _PROTOCOL_KEYS
    if unknown:
        raise ProtocolError(f"[protocol]: unknown key {sorted(unknown)[0]!r}", toml)
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise ProtocolError("[protocol]: name must be a non-empty string", toml)
    tolerance = table.get("tolerance")
    if "tolerance" in table and (not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool)
                                 or not tolerance > 0):
        raise ProtocolError(f"{name}: tolerance must be a positive number, got {tolerance!r}", toml)
    try:
        judging = judging_from_table(table, name)
    except ValueError as e:
        raise ProtocolError(str(e), toml) from None
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(e, str) for e in exclude):
        raise ProtocolError(f"{name}: exclude must be a list of problem names", toml)
    hook, note = None, ""
    if "module" in table:
        hook, describe = _load_hook(toml.parent / table["module"], table.get("function", "specs"), toml, name)
        note = _note(describe, dict(table.get("config", {})), toml, name)
    if not inputs and hook is None:
        raise ProtocolError(f"{name}: no [[inputs]] and no module: the protocol has no inputs", toml)
    return Protocol(name, str(table.get("description", "")), judging.atol, tuple(inputs),
                    bool(table.get("drop_nonfinite_reference", False)), tuple(exclude), hook,
                    dict(table.get("config", {})), str(toml), None if judging.is_default else judging, note=note)


def _load_hook(path: Path, function: str, toml: Path,
               name: str) -> tuple[Callable[..., list[dict[str, Any]]], Callable[..., str | None] | None]:
    if not path.is_file():
        raise ProtocolError(f"{name}: module {path.name} not found beside protocol.toml", toml)
    spec = importlib.util.spec_from_file_location(f"kbm_protocol_{name.replace('-', '_')}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ProtocolError(f"{name}: importing {path.name} raised {type(e).__name__}: {e}", toml) from e
    fn = getattr(module, function, None)
    if not callable(fn):
        raise ProtocolError(f"{name}: {path.name} has no function {function!r}", toml)
    describe = getattr(module, "describe", None)
    return fn, describe if callable(describe) else None


def _note(describe: Callable[..., str | None] | None, config: dict[str, Any], toml: Path, name: str) -> str:
    """The hook module's `describe(config)`, "" without one; a failure names the protocol."""
    if describe is None:
        return ""
    try:
        note = describe(config)
    except KbmError:
        raise
    except Exception as e:
        raise ProtocolError(f"{name}: describe(config) raised {type(e).__name__}: {e}", toml) from e
    return str(note) if note else ""


def protocol_toml(name: str, description: str, tolerance: float, specs: dict[str, list[InputSpec]],
                  drop_nonfinite_reference: bool = False, comment: str = "", judging: Judging | None = None) -> str:
    """A protocol.toml that lists `specs` per problem: the inverse of loading one."""
    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)  # numbers, strings and booleans read the same in TOML

    lines = [f"# {comment}", ""] if comment else []
    lines += ["[protocol]", f"name = {value(name)}", f"description = {value(description)}"]
    if judging is None or judging.is_default:
        lines.append(f"tolerance = {tolerance!r}")
    else:
        lines += [f"atol = {judging.atol!r}", f"rtol = {judging.rtol!r}", f"comparison = {value(judging.comparison)}",
                  f"reference = {value(judging.reference)}"]
    if drop_nonfinite_reference:
        lines.append("drop_nonfinite_reference = true")
    lines.append("")
    for problem, problem_specs in sorted(specs.items()):
        for spec in problem_specs:
            r = spec.record()
            lines += ["[[inputs]]", f"problem = {value(problem)}", f"seed = {r['seed']}", f"base = {value(r['base'])}"]
            lines += [f"{key} = {value(r[key])}" for key in ("params", "transforms", "shape") if r[key]]
            if r["reinit"] != "default":
                lines.append(f"reinit = {value(r['reinit'])}")
            if "hidden" in r:
                lines.append(f"hidden = {value(r['hidden'])}")
            lines += [f"label = {value(spec.label or spec.id)}", ""]
    return "\n".join(lines)
