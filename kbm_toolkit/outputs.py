"""Where commands write: output files and folders, made as needed, with one line when they cannot be."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kbm_toolkit.errors import OutputError


def output_folder(path: str | Path) -> Path:
    """`path` as a folder to write into, made (with its parents) if missing; OutputError if it cannot be."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError("is a file, not a folder to write into", folder) from None
    except OSError as e:
        raise OutputError(f"cannot make this folder: {e.strerror}", folder) from None
    return folder


@contextmanager
def output_file(path: str | Path) -> Iterator[Path]:
    """`path`, its folder made if missing; an OSError while writing it becomes one OutputError line."""
    target = Path(path)
    output_folder(target.parent)
    if target.is_dir():
        raise OutputError("is a folder, not a file to write", target)
    try:
        yield target
    except OSError as e:
        raise OutputError(f"cannot write: {e.strerror}", target) from None
