"""Find protocols: installed adapters (entry-point group `kbm.adapters`) or a path.

An entry point names a callable returning the adapter's folder (or its protocol.toml). Listing
names imports nothing; loading one adapter imports only that adapter. Every option that names a
protocol resolves it here, the same way: a protocol's name (an adapter's or a variant's), or a
folder or `.toml` file. A protocol given by path may not take an installed protocol's name: the
audit's denominator would silently use it in the installed one's place.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Iterable

from kbm_toolkit.errors import KbmError
from kbm_toolkit.protocols.protocol import Protocol, ProtocolError, load_protocols

GROUP = "kbm.adapters"

BUILT_IN = ("kernelbench", "kbv", "fuzz")
"""Adapters that ship with kbm: registered by its own entry points, and found without them when
kbm runs from a source tree that was never installed (as on a GPU box with no package index)."""

_BUILT_IN_TARGET = "kbm_toolkit.protocols.builtin:{name}"


def _entry_points() -> tuple[dict[str, EntryPoint], list[EntryPoint]]:
    """The adapters by name, and the plug-ins refused because they are named like a built-in one
    (the built-in one stays: a plug-in may not silently replace kbm's own check)."""
    found = {name: EntryPoint(name, _BUILT_IN_TARGET.format(name=name), GROUP) for name in BUILT_IN}
    refused = []
    for ep in entry_points(group=GROUP):
        if ep.name in BUILT_IN and ep.value != found[ep.name].value:
            refused.append(ep)
            continue
        found[ep.name] = ep
    return found, refused


def adapter_names() -> list[str]:
    """Names of the installed adapters, without importing any."""
    return sorted(_entry_points()[0])


def refused_adapters() -> dict[str, str]:
    """Plug-ins refused for their name (named like a built-in adapter): name → the line saying so;
    imports none."""
    return {ep.name: f"adapter {ep.name!r} ({ep.value}) is named like kbm's built-in {ep.name!r}, which it would "
                     "replace: it is not loaded (kbm's own is used); rename its entry point"
            for ep in _entry_points()[1]}


def adapter_protocols(name: str) -> list[Protocol]:
    """The protocols (base and variants) of installed adapter `name`."""
    ep = _entry_points()[0][name]
    try:
        target = ep.load()()
    except Exception as e:  # a third-party plug-in that breaks on import
        raise KbmError(f"adapter {name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}") from e
    return load_protocols(Path(target))


def all_protocols() -> list[Protocol]:
    """Every protocol of every installed adapter, each name once (`installed`)."""
    return [p for _, p in installed()]


def installed() -> list[tuple[str, Protocol]]:
    """(adapter, protocol) for every installed protocol, adapters by name. A plug-in's protocol (a
    variant, say) named like a built-in one, or like one of an adapter listed before it, is left
    out, so that no plug-in takes the place of a protocol kbm already has (`shadowed` names them)."""
    return _installed()[0]


def shadowed() -> list[str]:
    """The plug-in protocols left out because another adapter has one of that name, in words."""
    return _installed()[1]


def _installed() -> tuple[list[tuple[str, Protocol]], list[str]]:
    names = adapter_names()
    loaded = {name: adapter_protocols(name) for name in names}
    taken = {p.name: name for name in BUILT_IN if name in loaded for p in loaded[name]}
    rows, left_out = [], []
    for name in names:
        for p in loaded[name]:
            owner = taken.setdefault(p.name, name)
            if owner != name:
                left_out.append(f"protocol {p.name!r} of adapter {name!r} is named like one of adapter "
                                f"{owner!r}: it is not loaded; rename it")
                continue
            rows.append((name, p))
    return rows, left_out


def load_protocol(ref: str, known_problems: Iterable[str] | None = None) -> Protocol:
    """A protocol by name (an adapter's or a variant's) or by path (folder or .toml).

    A protocol loaded from a path may not share an installed protocol's name, and with
    `known_problems` (problem keys), every `problem` and `exclude` entry it has must name one of them.
    """
    path = Path(ref)
    if path.exists():
        protocol = load_protocols(path)[0]
        _check_not_shadowing(protocol)
        if known_problems is not None:
            check_problems_named(protocol, set(known_problems))
        return protocol
    names = adapter_names()
    if ref in names:
        for protocol in adapter_protocols(ref):
            if protocol.name == ref:
                return protocol
    for protocol in all_protocols():
        if protocol.name == ref:
            return protocol
    known = ", ".join(p.name for p in all_protocols()) or "none"
    raise KbmError(f"no adapter, protocol or path {ref!r} (installed: {known})")


def _check_not_shadowing(protocol: Protocol) -> None:
    for other in all_protocols():
        if other.name == protocol.name and Path(other.path).resolve() != Path(protocol.path).resolve():
            raise ProtocolError(f"protocol {protocol.name!r} is named like the installed one ({other.path}); "
                                "give it a name of its own", protocol.path)


def _names_problem(entry: str, keys: set[str]) -> bool:
    """Whether `entry` (a key, or `level/id`) names one of `keys`."""
    return entry in keys or any(k.split("_", 1)[0] == entry for k in keys)


def check_problems_named(protocol: Protocol, keys: set[str]) -> None:
    """ProtocolError unless every problem a protocol's `[[inputs]]` and `exclude` name is among `keys`."""
    named = [("exclude", e) for e in protocol.exclude]
    named += [(f"inputs #{i + 1}", e["problem"]) for i, e in enumerate(protocol.inputs) if "problem" in e]
    for where, entry in named:
        if not _names_problem(entry, keys):
            raise ProtocolError(f"{protocol.name}: {where} names {entry!r}, which is no problem here or in the store",
                                protocol.path)
