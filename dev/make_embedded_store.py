"""Make a store that ships in the package from stores our pipeline filled on a GPU.

    python dev/make_embedded_store.py .kbm/kb.db --compact   # kbm_toolkit/data/kernelbench.db.xz
    python dev/make_embedded_store.py .kbm/demo.db .kbm/gate.db --out kbm_toolkit/data/demo.db.xz
    python dev/make_embedded_store.py .kbm/kb.db --supplement-of kbm_toolkit/data/kernelbench.db.xz \
        --out kbm_toolkit/data/kernelbench.deep-search.db.xz

Copies the first store, merges the others into the copy (`kbm merge`), checks it holds at least
one finished run or some cells, switches to rollback journalling (a read-only copy must not need -shm files),
vacuums it and packs it with xz (kbm unpacks it once into its cache). Nothing is written by
hand: every row comes from `kbm` itself.

`--share F` caps every problem's evaluated share at F: when a wider run stopped part-way (some
problems at 70%, the rest at 60%), the shipped store scores every problem on the same 60%.

Problems recorded before kbm kept their module constants get them from their files, where those
are at the recorded paths (for the KernelBench pool: run it from the repository's root with the
checkout in third_party/KernelBench): a hook that varies shapes needs them, and the shipped store
goes where the files do not.

`--supplement-of BASE` writes a supplement instead (see `kbm_toolkit/store/shipped.py`): a store
of only the rows the source holds and the packed BASE lacks or holds otherwise (a later gate,
check or quarantine changes rows in place; `kbm merge` applies those changes). It checks that BASE
with the supplement merged in holds exactly the source's rows before it writes, and refuses a
source whose changes merging does not reproduce.

`--compact` keeps a sampled pool small: a mutant outside its problem's sample keeps only what
Table 1 and a later, wider `kbm run --sample` need (id, problem, rule, family, status, substrate
hash); its diff and compile record, and any cells it has, are dropped.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from kbm_toolkit.store import in_sample
from kbm_toolkit.paths import PACKAGE_DIR
from kbm_toolkit.problems.problem import problem_from_row
from kbm_toolkit.store import Store, copy_store
from kbm_toolkit.store.merge import MERGED
from kbm_toolkit.store.shipped import merge_supplement, unpack

DROPPED = ("target", "line", "col", "start", "end", "original", "replacement", "name", "source_hash", "image_hash",
           "duplicate_of", "compile_ms", "message", "diff", "arch", "created")
"""Mutant columns an unsampled mutant of a compacted store does without."""


def compact(store: Store) -> int:
    """Strip the mutants outside each problem's sample (see the module's doc); return how many."""
    db = store.db
    db.conn.create_function("kbm_in_sample", 2, in_sample, deterministic=True)
    outside = ("select m.id from mutants m join problems p on p.key = m.problem "
               "where p.sample is not null and not kbm_in_sample(m.id, p.sample)")
    with db.conn:
        db.execute(f"delete from cells where mutant in ({outside})")
        n = db.execute(f"update mutants set {', '.join(f'{c} = null' for c in DROPPED)} "
                       f"where id in ({outside})").rowcount
    return n


def cap_share(store: Store, share: float) -> int:
    """Narrow each problem's evaluated share (and its full-row share) to at most `share`; return how many."""
    # a null share is the whole pool for an evaluated problem, and nothing for one never evaluated
    evaluated = sorted(store.evaluated_problems())
    with store.db.conn:
        store.db.execute("update problems set full_rows = ? where full_rows > ?", [share, share])
        return store.db.execute(f"update problems set sample = ? where key in ({', '.join('?' * len(evaluated))}) "
                                "and (sample is null or sample > ?)", [share, *evaluated, share]).rowcount


def fill_constants(store: Store) -> tuple[int, list[str]]:
    """Record the constants of problems whose rows lack them, from their files; (filled, still lacking)."""
    filled, lacking = 0, []
    with store.db.conn:
        for row in list(store.db.query("select * from problems where constants is null")):
            text = problem_from_row(row["key"], row).constants_text()
            if text is None:
                lacking.append(row["key"])
                continue
            store.db["problems"].update(row["key"], {"constants": text})
            filled += 1
    return filled, lacking


def _differences(conn: sqlite3.Connection, left: str, right: str) -> dict[str, int]:
    """Per table, how many rows of schema `left` schema `right` does not hold as they are."""
    out = {}
    for table in ["runs", *(t for t, _, _ in MERGED)]:
        n = conn.execute(f"select count(*) from (select * from {left}.{table} except "
                         f"select * from {right}.{table})").fetchone()[0]
        if n:
            out[table] = n
    return out


def make_supplement(source: Path, base: Path, packed: Path, work: Path) -> dict[str, int]:
    """Pack into `packed` the rows `source` holds and `base` lacks or holds otherwise; return them per table."""
    Store(source).close()
    target = work / "supplement.db"
    copy_store(source, target)
    conn = sqlite3.connect(target)
    conn.execute("attach ? as base", [str(unpack(base, work / "base.db"))])
    kept, referenced = {}, []
    with conn:
        for table, pk, run_column in MERGED:
            key = ", ".join(pk) if isinstance(pk, tuple) else pk
            # a row the base holds as it is goes; one a later run changed stays, for merging to apply
            conn.execute(f"delete from main.{table} where ({key}) in (select {key} from "
                         f"(select * from main.{table} intersect select * from base.{table}))")
            kept[table] = conn.execute(f"select count(*) from main.{table}").fetchone()[0]
            columns = (run_column,) if isinstance(run_column, str) else run_column or ()
            referenced += [f"select {c} from main.{table}" for c in columns]
        # a run the base holds stays when a kept row names it: merging maps it to the base's own
        conn.execute(f"delete from main.runs where id in (select id from base.runs) "
                     f"and id not in ({' union '.join(referenced)})")
        kept = {"runs": conn.execute("select count(*) from main.runs").fetchone()[0], **kept}
    conn.execute("detach base")
    conn.execute("pragma journal_mode=delete")
    conn.execute("vacuum")
    conn.close()
    staged = work / "supplement.db.xz"
    with open(target, "rb") as src, lzma.open(staged, "wb", preset=9 | lzma.PRESET_EXTREME) as dst:
        shutil.copyfileobj(src, dst)
    # the check: the base with the packed supplement merged in by kbm's own unpacking is the source again
    merge_supplement(unpack(base, work / "merged.db"), staged)
    conn = sqlite3.connect(work / "merged.db")
    conn.execute("attach ? as source", [str(source)])
    lost = {**_differences(conn, "source", "main"), **_differences(conn, "main", "source")}
    conn.close()
    if lost:
        sys.exit(f"the base with the supplement merged in differs from {source} in "
                 f"{', '.join(f'{n} {t}' for t, n in lost.items())} rows: merging does not reproduce "
                 "those changes; rebuild the base instead")
    shutil.move(staged, packed)
    return {t: n for t, n in kept.items() if n}


def main(sources: list[Path], packed: Path, compacted: bool = False, share: float | None = None) -> None:
    packed.parent.mkdir(parents=True, exist_ok=True)
    target = packed.with_suffix("") if packed.suffix == ".xz" else packed
    target.unlink(missing_ok=True)
    Store(sources[0]).close()  # migrate the source, so the copy is current
    copy_store(sources[0], target)
    store = Store(target)
    for other in sources[1:]:
        added = store.merge(Store(other))
        print(f"merged {other}: " + (", ".join(f"{n} {t}" for t, n in added.items() if n) or "nothing new"))
    if share is not None:
        print(f"capped {cap_share(store, share)} problems at a {share:.0%} share")
    if compacted:
        print(f"compacted {compact(store)} mutants outside their problem's sample")
    filled, lacking = fill_constants(store)
    if filled or lacking:
        print(f"recorded the constants of {filled} problems from their files"
              + (f"; {len(lacking)} lack them, their files not here (e.g. {lacking[0]})" if lacking else ""))
    runs = list(store.db.query("select id, kind, gpu, started from runs where finished is not null "
                               "or id in (select distinct run from cells)"))
    store.close()
    if not runs:
        target.unlink()
        sys.exit(f"{sources[0]}: no finished run and no cells to ship")
    dst = sqlite3.connect(target)
    dst.execute("pragma journal_mode=delete")
    dst.execute("vacuum")
    dst.close()
    for run in runs:
        print(f"run {run['id']}: {run['kind']} on {run['gpu']} at {run['started']}")
    if packed != target:
        with open(target, "rb") as src, lzma.open(packed, "wb", preset=9) as dst:
            shutil.copyfileobj(src, dst)
        target.unlink()
    print(f"wrote {packed} ({packed.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=PACKAGE_DIR / "data" / "kernelbench.db.xz")
    ap.add_argument("--compact", action="store_true", help="strip the mutants outside each problem's sample")
    ap.add_argument("--share", type=float, help="cap every problem's evaluated share at this (0-1]")
    ap.add_argument("--supplement-of", type=Path, metavar="BASE",
                    help="write only the rows the source holds and the packed store BASE lacks")
    args = ap.parse_args()
    if args.share is not None and not 0 < args.share <= 1:
        ap.error(f"--share {args.share}: a share is in (0, 1]")
    if args.supplement_of is not None:
        if len(args.sources) != 1 or args.compact or args.share is not None:
            ap.error("--supplement-of takes one source store and neither --compact nor --share")
        if args.out.resolve() == args.supplement_of.resolve():
            ap.error("--supplement-of: --out names the base itself")
        with tempfile.TemporaryDirectory() as work:
            rows = make_supplement(args.sources[0], args.supplement_of, args.out, Path(work))
        print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB): "
              + ", ".join(f"{n} {t}" for t, n in rows.items()))
    else:
        main(args.sources, args.out, args.compact, args.share)
