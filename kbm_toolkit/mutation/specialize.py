"""A kernel specialised to one launch: its scalar arguments and launch dimensions written in as
constants, so the compiler folds what that launch fixes.

Screening calls a mutant equivalent when its image equals the original's, which holds for every
launch. Many mutants a value check never witnesses are equivalent only for the launches a
problem makes: a stride of 1 makes `oh * stride` and `oh / stride` one expression, a square kernel
makes `KH` and `KW` one number, a size that is a multiple of the block makes a guard always true.
Compiling each kernel once per launch with those values as constants lets NVRTC decide it: if a
mutant's specialised kernels compile to the same machine code as the original's, no tensor values
can tell the two apart at those launches (`mutation.shape_equivalence` asks it per input shape).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Iterable

from kbm_toolkit.cuda.signatures import ENTRY_RE, Signature, entry_points
from kbm_toolkit.mutation.cuda_source import CudaSource

DIMS = re.compile(r"\b(blockDim|gridDim)\s*\.\s*([xyz])\b")
AXES = "xyz"


@dataclass(frozen=True)
class Definition:
    """Where an `extern "C" __global__` kernel's definition lies in its source."""

    name: str
    start: int
    name_start: int
    params: tuple[int, int]
    """The parameter list, without its parentheses."""
    body: tuple[int, int]
    """The body, with its braces."""


@dataclass(frozen=True)
class LaunchConfig:
    """What one launch fixes for a kernel: its grid, its block and its scalar arguments."""

    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    scalars: tuple[tuple[str, str, Any], ...]
    """(parameter, dtype, value) per scalar parameter, in order."""


def definitions(source: str) -> dict[str, Definition]:
    """Every `extern "C" __global__` kernel defined in `source`, by name."""
    code = CudaSource(source)
    found = {}
    for m in ENTRY_RE.finditer(source):
        if not code.is_code(m.start(1), m.end(1)):
            continue  # a kernel in a comment
        opened = m.start(2) - 1
        closed = code.matching(opened, "(", ")")
        brace = code.code.find("{", closed) if closed is not None else -1
        if closed is None or brace < 0 or code.code[closed + 1:brace].strip(" \t\n;"):
            continue  # a declaration, not a definition
        end = code.matching(brace, "{", "}")
        if end is None:
            continue
        found[m.group(1)] = Definition(m.group(1), m.start(), m.start(1), (opened + 1, closed), (brace, end + 1))
    return found


def literal(dtype: str, value: Any) -> str:
    """`value` as a C expression of exactly `dtype` (floats by their bits, so nothing rounds)."""
    if dtype == "float32":
        return f"__int_as_float(0x{struct.unpack('<I', struct.pack('<f', float(value)))[0]:08x})"
    if dtype == "float64":
        return f"__longlong_as_double(0x{struct.unpack('<Q', struct.pack('<d', float(value)))[0]:016x}LL)"
    if dtype == "bool":
        return "true" if value else "false"
    v = int(value)
    suffix = {"int64": "LL", "uint32": "u", "uint64": "ull"}.get(dtype, "")
    if v < 0:  # the most negative value has no literal of its own type
        return f"(-{-v - 1}{suffix} - 1)"
    return f"{v}{suffix}"


def clone(source: str, definition: Definition, signature: Signature, config: LaunchConfig, name: str) -> str:
    """The kernel of `definition` renamed `name`, taking only its pointers, with the scalars, the
    block and the grid of `config` written in."""
    pieces = _split_params(source[definition.params[0]:definition.params[1]])
    kept = [piece for piece, p in zip(pieces, signature.params) if p.pointer]
    values = {p: (d, v) for p, d, v in config.scalars}
    lines = [f"    {p.ctype} {p.name} = {literal(*values[p.name])};" for p in signature.params if not p.pointer]
    sizes = {"blockDim": _three(config.block), "gridDim": _three(config.grid)}
    for axis, (b, g) in enumerate(zip(sizes["blockDim"], sizes["gridDim"])):
        lines.append(f"    __builtin_assume(threadIdx.{AXES[axis]} < {b}u); __builtin_assume(blockIdx.{AXES[axis]} < {g}u);")
    body = source[definition.body[0] + 1:definition.body[1]]
    body = DIMS.sub(lambda m: f"({sizes[m.group(1)][AXES.index(m.group(2))]}u)", body)
    head = source[definition.start:definition.name_start]
    return f"{head}{name}({', '.join(kept)}) {{\n" + "\n".join(lines) + "\n" + body + "\n"


def specialized_source(source: str, configs: dict[str, Iterable[LaunchConfig]]) -> str:
    """`source` with each kernel named in `configs` replaced by one clone per launch config, and
    every other kernel dropped: the clones are what is compared, and a network's other kernels
    only cost compile time (a kernel with no config is dropped too: nothing launches it)."""
    found = definitions(source)
    signatures = entry_points(source)
    missing = sorted(set(configs) - set(found))
    if missing:
        raise KeyError(f"no definition of kernel {missing[0]!r}")
    out, at = [], 0
    for d in sorted(found.values(), key=lambda d: d.start):
        out.append(source[at:d.start])
        out.extend(clone(source, d, signatures[d.name], c, f"{d.name}__at{i}")
                   for i, c in enumerate(dict.fromkeys(configs.get(d.name, ()))))
        at = d.body[1]
    out.append(source[at:])
    return "".join(out)


def _three(dims: tuple[int, ...]) -> tuple[int, int, int]:
    return tuple(dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def _split_params(text: str) -> list[str]:
    """A parameter list's parameters (no default arguments or templates in kernels' lists)."""
    return [p.strip() for p in text.split(",")] if text.strip() not in ("", "void") else []
