"""Where kbm's shipped data folders and the user's store live."""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import tempfile
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


SHIPPED_STORES = {"kernelbench": "the KernelBench pool (a sample), the default for reports",
                  "demo": "the built-in problems' pool"}
"""Stores made by kbm's own pipeline on an H200 that ship, xz-packed, in `kbm_toolkit/data/`."""


def shipped_store_path(name: str = "kernelbench") -> Path:
    """A shipped store, unpacked once into the cache; a path that does not exist when it is absent.

    The package holds `data/NAME.db.xz`; the unpacked copy is migrated to this kbm's schema and
    named by the packed file's hash and that schema, so no kbm reads a copy made by another.
    """
    packed = PACKAGE_DIR / "data" / f"{name}.db.xz"
    if not packed.is_file():
        return PACKAGE_DIR / "data" / f"{name}.db"  # absent
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()[:16]
    for folder in (cache_dir() / "shipped", Path(tempfile.gettempdir()) / "kbm-shipped"):
        target = folder / f"{name}-{digest}-m{_schema_version()}.db"  # one copy per packed file and schema
        if target.is_file():
            return target
        try:
            folder.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.part")
            try:
                with lzma.open(packed) as src, open(partial, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except (EOFError, lzma.LZMAError) as e:
                partial.unlink(missing_ok=True)
                from kbm_toolkit.errors import StoreError

                raise StoreError(f"the shipped store is damaged ({e}); reinstall kbm", packed) from None
            _upgrade(partial)
            os.replace(partial, target)  # atomic: a concurrent reader never sees half a file
            return target
        except OSError:
            continue  # e.g. a read-only cache folder: try the next one
    raise OSError(f"cannot unpack {packed}: no writable cache folder")


def _schema_version() -> int:
    from kbm_toolkit.store.store import MIGRATIONS

    return len(MIGRATIONS)


def _upgrade(path: Path) -> None:
    """Apply this kbm's pending migrations to an unpacked copy, once, so reads need no upgrade."""
    import sqlite3

    from kbm_toolkit.store.store import Store

    Store(path).close()
    with sqlite3.connect(path) as conn:  # back to one file: readers open it read-only
        conn.execute("pragma journal_mode=delete")


def embedded_store_path() -> Path:
    """The shipped store reports fall back to: the KernelBench pool."""
    return shipped_store_path("kernelbench")


def cache_dir() -> Path:
    """Compiled images cached by source hash: `KBM_CACHE`, else `$XDG_CACHE_HOME/kbm`."""
    if os.environ.get("KBM_CACHE"):
        return Path(os.environ["KBM_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kbm"
