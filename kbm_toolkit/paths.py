"""Where kbm's shipped data folders, the user's store and the compile cache live."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def data_dir(name: str) -> Path:
    """A shipped data folder (`problems`, `substrates`, `adapters`, `rules`).

    A wheel carries it inside the package; an editable install or a checkout reads it from the
    repository's top level.
    """
    inside = PACKAGE_DIR / "data" / name
    if inside.is_dir():
        return inside
    return REPO_DIR / name


def default_store_path() -> Path:
    """The user's store: `KBM_STORE`, else `$XDG_DATA_HOME/kbm/kbm.db`."""
    if os.environ.get("KBM_STORE"):
        return Path(os.environ["KBM_STORE"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "kbm" / "kbm.db"


def cache_dir() -> Path:
    """Compiled images cached by source hash: `KBM_CACHE`, else `$XDG_CACHE_HOME/kbm`."""
    if os.environ.get("KBM_CACHE"):
        return Path(os.environ["KBM_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kbm"
