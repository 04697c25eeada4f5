"""The hang fuse: make a mutant's endless loop trap itself instead of waiting for the watchdog.

A kernel killed from the host keeps the GPU until the driver tears its context down, which can
take far longer than the kill; a kernel that traps ends at once, like any crash. The fuse reads
the SM clock at the entry of every device function and checks it in every loop condition:

    for (int i = t; i < n; i += s)   ->   for (int i = t; (kbm_fuse(kbm_t0), (i < n)); i += s)

It is applied to mutants only, after screening (dedup and equivalence see the bare source); the
correct substrate always runs bare.
"""

from __future__ import annotations

import re

from kbm_toolkit.cuda_source import CudaSource

CLOCK_HZ = 2.0e9
"""SM cycles per second assumed when converting the fuse's budget (Hopper boosts to ~1.98 GHz)."""

_FUNCTION = re.compile(r"\b(?:__global__|__device__)\b[^;{}]*?\)\s*(?:const\s*)?\{")


def prelude(seconds: float) -> str:
    """The fuse's helper, placed before the source."""
    return ("static __device__ __forceinline__ void kbm_fuse(long long t0) {\n"
            f"    if (clock64() - t0 > {int(seconds * CLOCK_HZ)}LL) __trap();\n"
            "}\n")


def fuse_source(source: str, seconds: float) -> str:
    """`source` with every device function's loops made to trap after about `seconds`."""
    parsed = CudaSource(source)
    edits: list[tuple[int, int, str]] = []
    for m in _FUNCTION.finditer(parsed.code):
        edits.append((m.end(), m.end(), " const long long kbm_t0 = clock64();"))
    for kind in ("for", "while"):
        for span in parsed.headers[kind]:
            if kind == "for":
                parts = _split_semicolons(parsed.code, span.start, span.end)
                if parts is None:
                    continue
                start, end = parts
            else:
                start, end = span.start, span.end
            cond = source[start:end].strip()
            edits.append((start, end, f" (kbm_fuse(kbm_t0), ({cond or 'true'}))"))
    out = source
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    return prelude(seconds) + out


def _split_semicolons(code: str, start: int, end: int) -> tuple[int, int] | None:
    """[start, end) of the condition of a `for` header whose contents span [start, end)."""
    depth, semis = 0, []
    for i in range(start, end):
        ch = code[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            semis.append(i)
    if len(semis) != 2:
        return None  # a range-for or something stranger: leave it bare
    return semis[0] + 1, semis[1]
