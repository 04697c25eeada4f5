"""Screening: compile every mutant with NVRTC and classify it before anything runs on a GPU.

Every distinct kernel source compiles once (in parallel, cached by source hash). A mutant is
`compile_error`, `equivalent` (its cubin, and launcher, equal the original's), `duplicate` (equal
to an earlier mutant's: it points at that one) or `distinct`. Nothing is dropped silently: every
mutant and its status goes to the store.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.errors import CompileError
from kbm_toolkit.mutation.mutants import Mutant
from kbm_toolkit.vocabulary import MutantStatus


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Screened:
    """A mutant after compilation and dedup."""

    mutant: Mutant
    status: str
    image_hash: str | None = None
    duplicate_of: str | None = None
    compile_ms: float | None = None
    message: str = ""


def _compile(job: tuple[str, str]) -> tuple[str | None, float, str]:
    source, arch = job
    try:
        image = compile_source(source, arch)
        return image.image_hash, image.compile_ms, ""
    except CompileError as e:
        return None, 0.0, e.message


def screen(mutants: list[Mutant], original_kernel: str, original_launcher: str, arch: str,
           workers: int | None = None, on_progress: Callable[[int], Any] | None = None) -> list[Screened]:
    """Compile every distinct kernel source once, in parallel, and classify each mutant."""
    original_image = compile_source(original_kernel, arch).image_hash
    sources = sorted({m.kernel_source for m in mutants if m.kernel_source != original_kernel})
    images: dict[str, tuple[str | None, float, str]] = {original_kernel: (original_image, 0.0, "")}
    workers = workers or os.cpu_count() or 1
    if sources:
        with ProcessPoolExecutor(workers) as pool:
            for source, result in zip(sources, pool.map(_compile, [(s, arch) for s in sources], chunksize=4)):
                images[source] = result
                if on_progress:
                    on_progress(1)
    seen: dict[tuple[str, str], str] = {}
    original_key = (original_image, _sha(original_launcher))
    screened = []
    for m in mutants:
        image, ms, message = images[m.kernel_source]
        if image is not None and m.target == "launcher":
            try:
                compile(m.launcher_source, "launch.py", "exec")
            except SyntaxError as e:
                image, message = None, f"launch.py:{e.lineno}: {e.msg}"
        if image is None:
            screened.append(Screened(m, MutantStatus.COMPILE_ERROR, None, None, ms, message))
            continue
        key = (image, _sha(m.launcher_source))
        if key == original_key:
            screened.append(Screened(m, MutantStatus.EQUIVALENT, image, None, ms))
        elif key in seen:
            screened.append(Screened(m, MutantStatus.DUPLICATE, image, seen[key], ms))
        else:
            seen[key] = m.id
            screened.append(Screened(m, MutantStatus.DISTINCT, image, None, ms))
    return screened
