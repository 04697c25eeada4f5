"""Which kernels of a cubin a mutation changed: its ELF sections, kernel by kernel.

NVRTC's cubin keeps each `extern "C" __global__` kernel in sections of its own (`.text.NAME`,
`.nv.info.NAME`, `.nv.constant0.NAME`, `.nv.shared.NAME` ...), with device functions inlined
into them. Comparing a mutant's image with the original's section by section says which kernels
run differently, so a level-3 mutant can be placed at the launches of exactly those kernels.
"""

from __future__ import annotations

import struct
from typing import Iterable

from kbm_toolkit.errors import KbmError

BOOKKEEPING = frozenset({"", ".shstrtab", ".strtab", ".symtab", ".debug_frame", ".rela.debug_frame",
                         ".nv.info", ".nv.compat", ".note.nv.tkinfo", ".note.nv.cuinfo"})
"""Sections that follow from the kernels' code (symbol offsets, register counts, notes): a change
in them comes with a change in some kernel's own sections, or changes nothing that runs."""

PER_KERNEL = (".text", ".nv.info", ".nv.constant0", ".nv.shared", ".rel.text", ".rela.text", ".nv.local")
"""The prefixes of a kernel's own sections (`PREFIX.NAME`)."""

_NOBITS = 8  # sh_type of a section with a size and no bytes in the file (.nv.shared.*)


def sections(cubin: bytes) -> dict[str, bytes | int]:
    """A 64-bit little-endian ELF's sections by name: their bytes (a size for those without any)."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise KbmError("not a 64-bit little-endian ELF cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * entsize) for i in range(count)]
    table = headers[names][4]
    found: dict[str, bytes | int] = {}
    for name, kind, _, _, offset, size in headers:
        label = cubin[table + name:cubin.index(b"\0", table + name)].decode()
        found[label] = size if kind == _NOBITS else cubin[offset:offset + size]
    return found


def changed_kernels(before: dict[str, bytes | int], after: dict[str, bytes | int],
                    kernels: Iterable[str]) -> set[str]:
    """The kernels (of `kernels`, the source's entry points) whose sections differ between two
    images of one source (`sections` of each); all of them when a section that belongs to none
    differs (a device function NVRTC did not inline, a `__constant__` array), since any kernel
    may use it."""
    kernels = set(kernels)
    changed: set[str] = set()
    for name in (set(before) | set(after)) - BOOKKEEPING:
        if before.get(name) == after.get(name):
            continue
        owner = next((name[len(p) + 1:] for p in PER_KERNEL if name.startswith(p + ".")
                      and name[len(p) + 1:] in kernels), None)
        if owner is None:
            return kernels
        changed.add(owner)
    return changed
