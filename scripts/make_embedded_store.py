"""Make the embedded store that ships in the package from a store our pipeline filled on a GPU.

    python scripts/make_embedded_store.py SOURCE.db [kbm_toolkit/data/embedded.db]

Copies the database, checks it opens as a kbm store with at least one finished run, folds the
WAL back in and switches to rollback journalling (a read-only package folder cannot hold -shm
files), then vacuums it. Nothing is written by hand: every row comes from `kbm` itself.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from kbm_toolkit.paths import embedded_store_path
from kbm_toolkit.store import Store


def main(source: Path, target: Path) -> None:
    store = Store(source)
    runs = list(store.db.query("select id, kind, gpu, started from runs where finished is not null"))
    if not runs:
        sys.exit(f"{source}: no finished run to ship")
    store.close()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.execute("pragma journal_mode=delete")
    dst.execute("vacuum")
    dst.close()
    for run in runs:
        print(f"run {run['id']}: {run['kind']} on {run['gpu']} at {run['started']}")
    print(f"wrote {target} ({target.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else embedded_store_path())
