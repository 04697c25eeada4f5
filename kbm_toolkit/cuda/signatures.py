"""Entry-point signatures read from device source, so launches pass correctly typed arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kbm_toolkit.errors import SubstrateError
from kbm_toolkit.problems.substrate import Substrate

ENTRY_RE = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)",
    re.S,
)
"""An `extern "C" __global__` kernel's head: group 1 its name, group 2 its parameter list."""
_QUALIFIERS = {"const", "__restrict__", "restrict", "volatile", "struct"}

SCALAR_TYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "__half": "float16", "half": "float16",
    "__nv_bfloat16": "bfloat16",
    "int": "int32", "int32_t": "int32", "unsigned": "uint32", "unsigned int": "uint32",
    "uint32_t": "uint32", "long": "int64", "long long": "int64", "long int": "int64",
    "long long int": "int64", "int64_t": "int64", "size_t": "uint64", "uint64_t": "uint64",
    "unsigned long long": "uint64", "bool": "bool", "char": "int8", "signed char": "int8",
    "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8", "short": "int16",
    "int16_t": "int16",
}
"""C type → dtype name (torch for pointers, numpy for scalars)."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name, its base type's dtype name, and whether it is a pointer."""

    name: str
    dtype: str
    pointer: bool
    ctype: str = field(default="", compare=False)
    """The C type as the source writes it, qualifiers aside (`long long`, `float`)."""


@dataclass(frozen=True)
class Signature:
    """An `extern "C" __global__` entry point."""

    name: str
    params: tuple[Param, ...]


def entry_points(source: str, where: str = "kernel.cu") -> dict[str, Signature]:
    """Every `extern "C" __global__` entry point in `source`, by name."""
    found: dict[str, Signature] = {}
    for m in ENTRY_RE.finditer(_strip_comments(source)):
        name, params = m.group(1), m.group(2).strip()
        parsed = tuple(_param(p, name, where) for p in params.split(",")) if params not in ("", "void") else ()
        found[name] = Signature(name, parsed)
    return found


def _param(text: str, kernel: str, where: str) -> Param:
    pointer = "*" in text
    words = [w for w in re.split(r"[\s*&]+", text.strip()) if w and w not in _QUALIFIERS]
    if len(words) < 2:
        raise SubstrateError(f"kernel {kernel}: cannot read parameter {text.strip()!r}", where)
    name, ctype = words[-1], " ".join(words[:-1])
    if ctype not in SCALAR_TYPES:
        raise SubstrateError(f"kernel {kernel}: parameter {name!r} has unsupported type {ctype!r}", where)
    return Param(name, SCALAR_TYPES[ctype], pointer, ctype)


def _strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def kernel_signatures(substrate: Substrate, source: str | None = None) -> dict[str, Signature]:
    """The entry points of a substrate's device source (or of `source`, a mutant's); SubstrateError
    when there is none."""
    found = entry_points(substrate.source if source is None else source, str(substrate.kernel_path))
    if not found:
        raise SubstrateError('no extern "C" __global__ entry point', substrate.kernel_path)
    return found
