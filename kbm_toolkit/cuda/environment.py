"""What kbm runs on: versions and the CUDA device, for `kbm doctor` and run provenance."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any

from kbm_toolkit import __version__


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
