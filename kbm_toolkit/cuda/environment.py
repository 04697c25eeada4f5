"""What kbm runs on: versions and the CUDA device, for `kbm doctor` and run provenance."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from kbm_toolkit import __version__
from kbm_toolkit.paths import cache_dir
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.store import SHIPPED_STORES, shipped_store_path


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def software() -> dict[str, Any]:
    """Versions of kbm and what it stands on; needs no GPU."""
    info: dict[str, Any] = {
        "kbm": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": _version("torch"),
        "cuda_core": _version("cuda-core"),
        "cuda_bindings": _version("cuda-bindings"),
        "sqlite_utils": _version("sqlite-utils"),
    }
    try:
        from kbm_toolkit.cuda.nvrtc import nvrtc_version

        info["nvrtc"] = nvrtc_version()
    except Exception as e:  # doctor reports a broken NVRTC rather than failing
        info["nvrtc"] = f"unavailable ({type(e).__name__}: {e})"
    return info


def device() -> dict[str, Any]:
    """The visible CUDA device, or `{"cuda": False}`; this initialises CUDA, so call it in a worker."""
    import torch

    info: dict[str, Any] = {"cuda": bool(torch.cuda.is_available()), "torch_cuda": torch.version.cuda,
                            "reference_precision": "ieee-fp32 (TF32 off)"}
    if not info["cuda"]:
        return info
    major, minor = torch.cuda.get_device_capability()
    props = torch.cuda.get_device_properties(0)
    info.update(gpu=torch.cuda.get_device_name(0), arch=f"sm_{major}{minor}", gpus=torch.cuda.device_count(),
                memory_gib=round(props.total_memory / 2**30, 1))
    try:
        from cuda.bindings import driver

        driver.cuInit(0)
        _, version = driver.cuDriverGetVersion()
        info["driver_cuda"] = f"{version // 1000}.{version % 1000 // 10}"
    except Exception:
        pass
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        info["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        info["driver"] = None
    return info


def describe_task(_: Any = None) -> dict[str, Any]:
    """Worker task: software plus device."""
    return {**software(), **device(), "python_executable": sys.executable}


def doctor_rows(problem_set: ProblemSet, store_path: Path) -> list[tuple[str, str]]:
    """`kbm doctor`: versions, the device, where problems come from, where the stores and the cache are."""
    info = describe_task()
    rows = [("kbm", info["kbm"]), ("python", f"{info['python']} ({info['python_executable']})"),
            ("torch", f"{info['torch']} (CUDA build {info.get('torch_cuda') or 'none'})"),
            ("cuda-core", info["cuda_core"]), ("cuda-bindings", info["cuda_bindings"]),
            ("NVRTC", info["nvrtc"])]
    if info["cuda"]:
        rows.append(("device", f"{info['gpu']} ({info['arch']}, {info['memory_gib']} GiB, "
                               f"{info['gpus']} visible, driver {info.get('driver') or '?'})"))
    else:
        rows.append(("device", "none visible: kbm compiles (NVRTC) and reports from the store; "
                               "gate and evaluation need a GPU"))
    for pack in problem_set.packs:
        count = sum(1 for p in problem_set.problems().values() if p.origin == pack.name)
        rows.append((f"problems ({pack.name})", f"{pack.problems} ({count} problems)"))
    if not problem_set.has_kernelbench:
        rows.append(("KernelBench", "not set: pass --kernelbench PATH or set KBM_KERNELBENCH"))
    rows.append(("store", str(store_path)))
    for name in SHIPPED_STORES:
        path = shipped_store_path(name)
        rows.append((f"shipped @{name}", f"{path}" + ("" if path.is_file() else " (absent)")))
    rows.append(("compile cache", str(cache_dir())))
    return rows
