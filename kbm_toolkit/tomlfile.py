"""Read TOML files with errors that name the file and the line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kbm_toolkit.errors import KbmError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def load_toml(path: Path) -> dict[str, Any]:
    """Parse `path`; a malformed file raises KbmError naming it and the parser's reason."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise KbmError(f"cannot read: {e.strerror}", path) from None
    return loads_toml(text, path)


def loads_toml(text: str, where: str | Path) -> dict[str, Any]:
    """Parse `text`; malformed, it raises KbmError naming `where` (its file, or what holds it)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise KbmError(f"not valid TOML: {e}", where) from None
