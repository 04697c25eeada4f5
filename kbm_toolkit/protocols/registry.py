"""Find protocols: installed adapters (entry-point group `kbm.adapters`, and the packs' `adapters/`) or a path.

An entry point names a callable returning the adapter's folder (or its protocol.toml); a loaded
pack's `adapters/<name>/` is adapter `<name>`, and may take no installed adapter's or protocol's name. Listing
names imports nothing; loading one adapter imports only that adapter. Every option that names a
protocol resolves it here, the same way: a protocol's name (an adapter's or a variant's), or a
folder or `.toml` file. A protocol given by path may not take an installed protocol's name: the
audit's denominator would silently use it in the installed one's place.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Callable, Iterable

from kbm_toolkit.errors import KbmError
from kbm_toolkit.problems.pack import user_packs
from kbm_toolkit.protocols.protocol import Protocol, ProtocolError, load_protocols, stored_protocol

GROUP = "kbm.adapters"

BUILT_IN = ("kernelbench", "kbv", "fuzz", "stress", "probe")
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


def _pack_adapters(taken: Iterable[str]) -> dict[str, Path]:
    """Every loaded pack's `adapters/<name>/` by name; one named like an installed adapter (`taken`)
    or like another pack's is a ProtocolError naming its protocol.toml."""
    found: dict[str, Path] = {}
    taken = set(taken)
    for pack in user_packs():
        for folder in pack.adapter_folders():
            if folder.name in taken or folder.name in found:
                other = "an installed adapter" if folder.name in taken else f"the adapter at {found[folder.name]}"
                raise ProtocolError(f"adapter {folder.name!r} of pack {pack.name!r} is named like {other}: "
                                    "rename its folder", folder / "protocol.toml")
            found[folder.name] = folder
    return found


def _adapters() -> dict[str, EntryPoint | Path]:
    """Every adapter by name: entry points (the built-in ones too), then the packs' folders."""
    eps = _entry_points()[0]
    return {**eps, **_pack_adapters(eps)}


def adapter_names() -> list[str]:
    """Names of the installed adapters (the packs' too), without importing any."""
    return sorted(_adapters())


def refused_adapters() -> dict[str, str]:
    """Plug-ins refused for their name (named like a built-in adapter): name → the line saying so;
    imports none."""
    return {ep.name: f"adapter {ep.name!r} ({ep.value}) is named like kbm's built-in {ep.name!r}, which it would "
                     "replace: it is not loaded (kbm's own is used); rename its entry point"
            for ep in _entry_points()[1]}


def adapter_protocols(name: str) -> list[Protocol]:
    """The protocols (base and variants) of installed adapter `name`."""
    return _protocols_of(name, _adapters()[name])


def _protocols_of(name: str, target: EntryPoint | Path) -> list[Protocol]:
    if isinstance(target, Path):  # a pack's adapter folder
        return load_protocols(target)
    try:
        folder = target.load()()
    except Exception as e:  # a third-party plug-in that breaks on import
        raise KbmError(f"adapter {name!r} ({target.value}) failed to load: {type(e).__name__}: {e}") from e
    return load_protocols(Path(folder))


def all_protocols() -> list[Protocol]:
    """Every protocol of every installed adapter, each name once (`installed`)."""
    return [p for _, p in installed()]


def default_denominator(store: Any) -> list[Protocol]:
    """The witnesses when none are named: every installed protocol, then every one `store` keeps (a
    run was given it by path, e.g. `kbm targets`' inputs): a witness found by any input is one."""
    chosen = all_protocols()
    names = {p.name for p in chosen}
    # the store's own text, never a folder of that name where kbm runs (a stale copy would score instead)
    return chosen + [stored_protocol(n, store.protocol_toml(n)) for n in store.protocol_names() if n not in names]


def installed() -> list[tuple[str, Protocol]]:
    """(adapter, protocol) for every installed protocol, adapters by name. A plug-in's protocol (a
    variant, say) named like a built-in one, or like one of an adapter listed before it, is left
    out, so that no plug-in takes the place of a protocol kbm already has (`shadowed` names them);
    a pack's protocol named like any other is a ProtocolError naming its file."""
    return _installed()[0]


def shadowed() -> list[str]:
    """The plug-in protocols left out because another adapter has one of that name, in words."""
    return _installed()[1]


def _installed() -> tuple[list[tuple[str, Protocol]], list[str]]:
    adapters = _adapters()
    loaded = {name: _protocols_of(name, target) for name, target in sorted(adapters.items())}
    plugins = [name for name in loaded if not isinstance(adapters[name], Path)]
    taken = {p.name: name for name in BUILT_IN if name in loaded for p in loaded[name]}
    rows, left_out = [], []
    for name in plugins:
        for p in loaded[name]:
            owner = taken.setdefault(p.name, name)
            if owner != name:
                left_out.append(f"protocol {p.name!r} of adapter {name!r} is named like one of adapter "
                                f"{owner!r}: it is not loaded; rename it")
                continue
            rows.append((name, p))
    for name in (n for n in loaded if n not in plugins):  # a pack's protocols: a clash is the pack's error
        for p in loaded[name]:
            if p.name in taken:
                raise ProtocolError(f"protocol {p.name!r} of pack adapter {name!r} is named like one of adapter "
                                    f"{taken[p.name]!r}: rename it", p.path)
            taken[p.name] = name
            rows.append((name, p))
    return sorted(rows, key=lambda row: row[0]), left_out


def load_protocol(ref: str, known_problems: Iterable[str] | None = None,
                  stored: Callable[[str], str | None] | None = None) -> Protocol:
    """A protocol by name (an adapter's or a variant's, else one `stored` has the protocol.toml text
    of: a store's `protocol_toml`) or by path (folder or .toml).

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
    text = stored(ref) if stored is not None else None
    if text is not None:  # a protocol an earlier run was given by path, kept in the store
        return stored_protocol(ref, text)
    known = ", ".join(p.name for p in all_protocols()) or "none"
    raise KbmError(f"no adapter, protocol or path {ref!r} (installed: {known})")


def _check_not_shadowing(protocol: Protocol) -> None:
    for other in all_protocols():
        if other.name == protocol.name and Path(other.path).resolve() != Path(protocol.path).resolve():
            raise ProtocolError(f"protocol {protocol.name!r} is named like the installed one ({other.path}); "
                                "give it a name of its own", protocol.path)


def _names_problem(entry: str, keys: set[str]) -> bool:
    """Whether `entry` (a key, or `level/id`) names one of `keys` (a pack's level holds a slash, its name a `_`)."""
    return entry in keys or any(f"{k.rpartition('/')[0]}/{k.rpartition('/')[2].split('_', 1)[0]}" == entry
                                for k in keys)


def check_problems_named(protocol: Protocol, keys: set[str]) -> None:
    """ProtocolError unless every problem a protocol's `[[inputs]]` and `exclude` name is among `keys`."""
    named = [("exclude", e) for e in protocol.exclude]
    named += [(f"inputs #{i + 1}", e["problem"]) for i, e in enumerate(protocol.inputs) if "problem" in e]
    for where, entry in named:
        if not _names_problem(entry, keys):
            raise ProtocolError(f"{protocol.name}: {where} names {entry!r}, which is no problem here or in the store",
                                protocol.path)
