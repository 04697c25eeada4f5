"""Find protocols: installed adapters (entry-point group `kbm.adapters`) or a path.

An entry point names a callable returning the adapter's folder (or its protocol.toml). Listing
names imports nothing; loading one adapter imports only that adapter.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from kbm_toolkit.errors import KbmError
from kbm_toolkit.protocols.protocol import Protocol, load_protocols

GROUP = "kbm.adapters"


BUILT_IN = ("kernelbench", "kbv", "fuzz")
"""Adapters that ship with kbm: registered by its own entry points, and found without them when
kbm runs from a source tree that was never installed (as on a GPU box with no package index)."""


def _entry_points() -> dict[str, EntryPoint]:
    found = {name: EntryPoint(name, f"kbm_toolkit.protocols.builtin:{name}", GROUP) for name in BUILT_IN}
    return found | {ep.name: ep for ep in entry_points(group=GROUP)}


def adapter_names() -> list[str]:
    """Names of the installed adapters, without importing any."""
    return sorted(_entry_points())


def adapter_protocols(name: str) -> list[Protocol]:
    """The protocols (base and variants) of installed adapter `name`."""
    ep = _entry_points()[name]
    try:
        target = ep.load()()
    except Exception as e:  # a third-party plug-in that breaks on import
        raise KbmError(f"adapter {name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}") from e
    return load_protocols(Path(target))


def all_protocols() -> list[Protocol]:
    """Every protocol of every installed adapter."""
    return [p for name in adapter_names() for p in adapter_protocols(name)]


def load_protocol(ref: str) -> Protocol:
    """A protocol by name (an adapter's or a variant's) or by path (folder or .toml)."""
    path = Path(ref)
    if path.exists():
        return load_protocols(path)[0]
    names = adapter_names()
    if ref in names:
        for protocol in adapter_protocols(ref):
            if protocol.name == ref:
                return protocol
    for name in names:
        for protocol in adapter_protocols(name):
            if protocol.name == ref:
                return protocol
    known = ", ".join(p.name for p in all_protocols()) or "none"
    raise KbmError(f"no adapter, protocol or path {ref!r} (installed: {known})")
