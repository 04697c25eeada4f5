"""Compile device source to a cubin with NVRTC (no GPU needed), cached by source hash."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kbm_toolkit.errors import CompileError
from kbm_toolkit.paths import cache_dir

DEFAULT_ARCH = "sm_90"
"""Used when no device is visible: the H100/H200 the paper and kbm measure on."""

PROGRAM_NAME = "kernel.cu"
"""One fixed name, so the cubin does not depend on where a source came from."""

MACROS = [("INFINITY", "(__int_as_float(0x7f800000))"), ("NAN", "(__int_as_float(0x7fffffff))")]
"""NVRTC has no <math.h>: substrates still write `-INFINITY` and `NAN` as plain CUDA would."""


@dataclass(frozen=True)
class Image:
    """A compiled cubin and the hashes that key the cache and the dedup."""

    cubin: bytes
    source_hash: str
    image_hash: str
    arch: str
    compile_ms: float
    """Wall time of the NVRTC call; 0.0 when the image came from the cache."""
    cached: bool


def source_key(source: str, arch: str) -> str:
    """sha256 over the source, the target, the NVRTC version and the macros: the cache key."""
    h = hashlib.sha256()
    for part in (source, arch, nvrtc_version(), repr(MACROS)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def compile_source(source: str, arch: str = DEFAULT_ARCH, where: str = PROGRAM_NAME,
                   use_cache: bool = True) -> Image:
    """Compile `source` to a cubin for `arch`; raise CompileError with NVRTC's log on failure."""
    key = source_key(source, arch)
    cached = _cache_path(key)
    if use_cache and cached.is_file():
        cubin = cached.read_bytes()
        return Image(cubin, key, hashlib.sha256(cubin).hexdigest(), arch, 0.0, True)
    start = time.perf_counter()
    cubin = _nvrtc_cubin(source, arch, where)
    ms = (time.perf_counter() - start) * 1000
    if use_cache:
        _store_atomically(cached, cubin)
    return Image(cubin, key, hashlib.sha256(cubin).hexdigest(), arch, ms, False)


def _nvrtc_cubin(source: str, arch: str, where: str) -> bytes:
    from cuda.core import Program, ProgramOptions

    # Bundled headers (NVRTC >= 13.5) resolve <cuda_fp16.h> with no toolkit installed; older
    # NVRTCs get the toolkit's include folders instead.
    headers = (dict(use_bundled_headers=True) if _nvrtc_at_least(13, 5)
               else dict(include_path=_cuda_include_dirs()))
    program = Program(source, "c++", options=ProgramOptions(name=PROGRAM_NAME, arch=arch, std="c++17",
                                                          define_macro=MACROS, **headers))
    log = ""
    try:
        return bytes(program.compile("cubin").code)
    except Exception as e:  # cuda.core raises its own error types carrying NVRTC's log
        log = str(e)  # keep only the text: a held traceback would keep the program alive
    finally:
        program.close()
    first = next((ln.strip() for ln in log.splitlines() if "error" in ln), log.strip()[:200])
    raise CompileError(f"NVRTC: {first}", where, log=log)


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    """The NVRTC library's version, e.g. `13.5`."""
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def _nvrtc_at_least(major: int, minor: int) -> bool:
    got = tuple(int(x) for x in nvrtc_version().split("."))
    return got >= (major, minor)


@lru_cache(maxsize=1)
def _cuda_include_dirs() -> list[str]:
    candidates = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    dirs = [str(Path(c) / "include") for c in candidates if c and (Path(c) / "include" / "cuda_fp16.h").is_file()]
    try:  # pip-installed toolkits put headers beside the nvidia packages
        import nvidia

        for base in nvidia.__path__:
            dirs += [str(p.parent) for p in Path(base).glob("*/include/cuda_fp16.h")]
    except ImportError:
        pass
    return dirs


def _cache_path(key: str) -> Path:
    return cache_dir() / "cubin" / key[:2] / f"{key}.cubin"


def _store_atomically(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs speed
