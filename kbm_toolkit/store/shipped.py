"""The stores that ship with kbm, and which store a reading command reads.

Stores made by kbm's own pipeline on an H200 ship xz-packed in `kbm_toolkit/data/`: the
KernelBench pool (`@kernelbench`, levels 1-2, the default for reports), its level 3 apart while
only a share of it is evaluated (`@kernelbench-level3`), and the built-in problems' pool (`@demo`).
Each is unpacked once into the cache and migrated to this kbm's schema.

A store may ship with supplements, `data/NAME.PART.db.xz`: stores of the rows a later run added
(a long search's cells, say), merged into the unpacked copy in PART order as `kbm merge` would.
The base file then stays as it was committed and only the small supplement changes with each
batch of cells, so the repository does not hold a new copy of the whole pool for every batch.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

from kbm_toolkit.errors import StoreError
from kbm_toolkit import paths
from kbm_toolkit.store.schema import MIGRATIONS
from kbm_toolkit.store.store import Store

SHIPPED_STORES = {"kernelbench": "the KernelBench pool, the default for reports",
                  "demo": "the built-in problems' pool",
                  "kernelbench-level3": "KernelBench's level 3, a share evaluated"}
"""Stores made by kbm's own pipeline on an H200 that ship, xz-packed, in `kbm_toolkit/data/`."""

KEPT_COPIES = 2
"""Unpacked copies of one shipped store a cache folder keeps: the one unpacked last and the one
before it (another kbm installed beside this one), so upgrades do not pile up copies of the pool."""

DEFAULT_SHIPPED = "kernelbench"
"""The shipped store reports read while your own has nothing to show."""


def shipped_store_path(name: str = DEFAULT_SHIPPED) -> Path:
    """A shipped store, unpacked once into the cache; a path that does not exist when it is absent.

    The package holds `data/NAME.db.xz` and its supplements; the unpacked copy is migrated to this
    kbm's schema and named by the packed files' hash and that schema, so no kbm reads a copy made
    by another.
    """
    packed = paths.PACKAGE_DIR / "data" / f"{name}.db.xz"
    if not packed.is_file():
        return paths.PACKAGE_DIR / "data" / f"{name}.db"  # absent
    parts = supplements(name)
    hashed = hashlib.sha256(packed.read_bytes())
    for part in parts:  # a new supplement is a new copy: the name and the bytes both count
        hashed.update(part.name.encode() + b"\0" + part.read_bytes())
    digest = hashed.hexdigest()[:16]
    for folder in (paths.cache_dir() / "shipped", Path(tempfile.gettempdir()) / "kbm-shipped"):
        target = folder / f"{name}-{digest}-m{len(MIGRATIONS)}.db"  # one copy per packed file and schema
        if target.is_file():
            return target
        try:
            folder.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.part")
            try:
                unpack(packed, partial)
                for part in parts:
                    merge_supplement(partial, part)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            os.replace(partial, target)  # atomic: a concurrent reader never sees half a file
            _prune(folder, name)
            return target
        except OSError:
            continue  # e.g. a read-only cache folder: try the next one
    raise OSError(f"cannot unpack {packed}: no writable cache folder")


def _prune(folder: Path, name: str) -> None:
    """Remove all but the `KEPT_COPIES` newest unpacked copies of store `name` in `folder`: each is
    made again from the package when some kbm asks for it, and a reader that has one open keeps it."""
    copy = re.compile(rf"{re.escape(name)}-[0-9a-f]{{16}}-m\d+\.db")
    copies = sorted((f for f in folder.iterdir() if copy.fullmatch(f.name)), key=lambda f: f.stat().st_mtime_ns,
                    reverse=True)
    for stale in copies[KEPT_COPIES:]:
        for path in (stale, stale.with_name(stale.name + "-wal"), stale.with_name(stale.name + "-shm")):
            try:
                path.unlink(missing_ok=True)
            except OSError:  # e.g. a file another process holds open where that forbids unlinking
                pass


def supplements(name: str = DEFAULT_SHIPPED) -> list[Path]:
    """The supplements that ship with store `name` (`data/NAME.PART.db.xz`), in the order they merge."""
    return sorted((paths.PACKAGE_DIR / "data").glob(f"{name}.*.db.xz"))


def _unpack(packed: Path, target: Path) -> None:
    """Unpack one xz file; StoreError when it is damaged."""
    try:
        with lzma.open(packed) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    except (EOFError, lzma.LZMAError) as e:
        target.unlink(missing_ok=True)
        raise StoreError(f"the shipped store is damaged ({e}); reinstall kbm", packed) from None


def unpack(packed: Path, target: Path) -> Path:
    """A packed store (xz) unpacked at `target` and migrated to this kbm's schema; StoreError when damaged."""
    _unpack(packed, target)
    _upgrade(target)
    return target


def merge_supplement(path: Path, part: Path) -> None:
    """Merge the supplement `part` into the unpacked store at `path`, as kbm unpacks a shipped store."""
    unpacked = path.with_name(f"{path.name}.{part.name}")
    try:
        unpack(part, unpacked)
        into, rows = Store(path), Store(unpacked, readonly=True)
        try:
            into.merge(rows)
        finally:
            rows.close()
            into.close()
        _upgrade(path)  # back to one file
    finally:
        unpacked.unlink(missing_ok=True)


def _upgrade(path: Path) -> None:
    """Apply this kbm's pending migrations to an unpacked copy, once, so reads need no upgrade."""
    Store(path).close()
    with sqlite3.connect(path) as conn:  # back to one file: readers open it read-only
        conn.execute("pragma journal_mode=delete")


def open_shipped(name: str) -> Store:
    """The shipped store `@name`, read-only; StoreError naming the shipped ones when there is none."""
    if name not in SHIPPED_STORES or not shipped_store_path(name).is_file():
        raise StoreError(f"no shipped store @{name}; kbm ships "
                         + ", ".join(f"@{n} ({what})" for n, what in SHIPPED_STORES.items()))
    return Store(shipped_store_path(name), readonly=True)


def shipped_name(ref: str | Path | None) -> str | None:
    """NAME when a store is given as `@NAME` (a shipped one), else None."""
    text = str(ref) if ref is not None else ""
    return text[1:] if text.startswith("@") else None


def store_to_read(given: str | Path | None, default: Path, holding: str = "cells") -> Store:
    """The store a reading command reads: `@NAME` is a shipped one; a path given must hold a store
    (nothing is created); with nothing given, your store at `default`, unless it has no rows in
    `holding` (`cells` for reports, `mutants` for listings) and the shipped pool is here to read.
    """
    name = shipped_name(given)
    if name is not None:
        return open_shipped(name)
    if given is not None:
        return Store(given, create=False)
    shipped = shipped_store_path()
    if shipped.is_file():
        if not default.is_file():
            return Store(shipped, readonly=True)
        mine = Store(default)
        if mine.db[holding].count == 0:
            mine.close()
            return Store(shipped, readonly=True)
        return mine
    return Store(default, create=False)


def open_source(ref: str | Path) -> Store:
    """A store to copy rows from (`kbm merge`), read-only: `@NAME` for a shipped one, else a path."""
    name = shipped_name(ref)
    return open_shipped(name) if name is not None else Store(ref, readonly=True)


def open_store(ref: str | Path | None = None, holding: str = "cells") -> Store:
    """The store a reading command reads, in one call: `@NAME` (a shipped one), a path (which must
    hold a store), or with nothing given your store (KBM_STORE, else the XDG path), unless it has no
    rows in `holding` and the shipped pool stands in for it (`store_to_read`)."""
    return store_to_read(ref, paths.default_store_path(), holding)
