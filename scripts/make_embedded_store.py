"""Make the embedded store that ships in the package from stores our pipeline filled on a GPU.

    python scripts/make_embedded_store.py SOURCE.db [MORE.db...] [--out kbm_toolkit/data/embedded.db]

Copies the first store, merges the others into the copy (`kbm merge`), checks it holds at least
one finished run, switches to rollback journalling (a read-only package folder cannot hold -shm
files) and vacuums it. Nothing is written by hand: every row comes from `kbm` itself.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from kbm_toolkit.paths import embedded_store_path
from kbm_toolkit.store import Store


def main(sources: list[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    Store(sources[0]).close()  # migrate the source, so the copy is current
    src, dst = sqlite3.connect(sources[0]), sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    store = Store(target)
    for other in sources[1:]:
        added = store.merge(Store(other))
        print(f"merged {other}: " + (", ".join(f"{n} {t}" for t, n in added.items() if n) or "nothing new"))
    runs = list(store.db.query("select id, kind, gpu, started from runs where finished is not null"))
    store.close()
    if not runs:
        target.unlink()
        sys.exit(f"{sources[0]}: no finished run to ship")
    dst = sqlite3.connect(target)
    dst.execute("pragma journal_mode=delete")
    dst.execute("vacuum")
    dst.close()
    for run in runs:
        print(f"run {run['id']}: {run['kind']} on {run['gpu']} at {run['started']}")
    print(f"wrote {target} ({target.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=embedded_store_path())
    args = ap.parse_args()
    main(args.sources, args.out)
