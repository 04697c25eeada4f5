"""Where input specs come from for `kbm run --inputs SOURCE`.

Built in: `official` (KernelBench's five trials) and `gate` (the gate's set). Otherwise a TOML
file of `[[input]]` tables, or a JSON-lines file, each entry an input-spec record (see inputs.py)
with an optional `label`. Protocol adapters add their own sources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from kbm_toolkit.errors import KbmError
from kbm_toolkit.evaluation.gate import gate_specs
from kbm_toolkit.problems.input_spec import InputSpec, official_specs
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.protocols.protocol import Protocol
from kbm_toolkit.protocols.registry import load_protocol
from kbm_toolkit.tomlfile import load_toml


def gate_source(problem: Problem) -> list[InputSpec]:
    """The gate's inputs for `problem`: the official trials and the harder valid set."""
    return gate_specs(problem, substrate_for(problem))


def file_source(path: Path) -> Callable[[Problem], list[InputSpec]]:
    """Specs listed in a TOML (`[[input]]`) or JSON-lines file, grouped by problem."""
    if path.suffix == ".toml":
        entries = load_toml(path).get("input", [])
    else:
        try:
            entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise KbmError(f"line {e.lineno}: not JSON: {e.msg}", path) from None
    specs: dict[str, list[InputSpec]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise KbmError(f"entry {i + 1} is not a table", path)
        label = entry.get("label", f"{path.name} #{i + 1}")
        try:
            spec = InputSpec.from_record({k: v for k, v in entry.items() if k != "label"}, label)
        except KbmError as e:
            raise KbmError(f"entry {i + 1}: {e.message}", path) from None
        specs.setdefault(spec.problem, []).append(spec)
    return lambda problem: specs.get(problem.key, [])


BUILT_IN: dict[str, Callable[[Problem], list[InputSpec]]] = {"official": official_specs, "gate": gate_source}


def resolve(source: str, known_problems: Iterable[str] | None = None,
            stored: Callable[[str], str | None] | None = None,
            loaded: dict[str, Protocol | None] | None = None) -> Callable[[Problem], list[InputSpec]]:
    """A function from problem to its input specs: a built-in name, a protocol (an installed
    adapter's name, a protocol folder or .toml, which may name only `known_problems`, or one a
    store keeps: `stored` is its `protocol_toml`), or a file of spec records; several, separated by
    commas, give the union (an input shared by two counts once). A part `loaded` holds already
    (`fill.source_protocols`) is that protocol, not read again: its specs are made once."""
    if "," in source:
        parts = [resolve(part.strip(), known_problems, stored, loaded) for part in source.split(",") if part.strip()]

        def union(problem: Problem) -> list[InputSpec]:
            specs: dict[str, InputSpec] = {}
            for part in parts:
                for spec in part(problem):
                    specs.setdefault(spec.id, spec)  # in order; the first source's label wins
            return list(specs.values())

        return union
    if source in BUILT_IN:
        return BUILT_IN[source]
    if (loaded or {}).get(source) is not None:
        return loaded[source].specs
    path = Path(source)
    spec_file = path.suffix in (".jsonl", ".json") or (path.suffix == ".toml" and "protocol" not in load_toml(path))
    if path.is_file() and spec_file:
        return file_source(path)
    if path.exists():  # a protocol folder or file: what is wrong with it is its own error
        return load_protocol(source, known_problems).specs
    try:
        return load_protocol(source, stored=stored).specs
    except KbmError:
        raise KbmError(f"no input source {source!r}: use {', '.join(BUILT_IN)}, an adapter or a protocol the "
                       f"store keeps (kbm adapters), or a .toml/.jsonl file of specs") from None
