"""Regenerate docs/screenshots from the shipped stores: TUI screens (SVG, the built-in pool) and
report figures (PNG, the KernelBench pool).

    python dev/make_screenshots.py [--store STORE] [--figures-store STORE] [--out docs/screenshots]

Drives `kbm tui` with Textual's pilot (overview, miss patterns, problems, one mutant's detail)
and runs `kbm report -a kernelbench -a kbv -a fuzz`; needs the `tui` and `report` extras.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path

from kbm_toolkit.store import shipped_store_path
from kbm_toolkit.protocols.registry import all_protocols

SIZE = (120, 34)
FIGURES = ("missed_by_family", "problem_miss_curve", "miss_patterns", "band_by_problems", "budget_curve",
           "cover_sizes", "ceiling_noise", "blind_band", "blind_band_by_length")


async def screens(store: Path, out: Path) -> list[Path]:
    from kbm_toolkit.tui.app import KbmApp

    app = KbmApp(store, all_protocols())
    written = []
    async with app.run_test(size=SIZE) as pilot:
        async def shot(name: str, *keys: str) -> None:
            await pilot.press(*keys)
            await pilot.app.workers.wait_for_complete()
            await pilot.pause(0.2)
            written.append(out / f"tui-{name}.svg")
            written[-1].write_text(app.export_screenshot(title=f"kbm tui: {name}"))

        await shot("overview")
        await shot("patterns", "p")
        await shot("problems", "r")
        await shot("mutant", "p", "down", "enter", "enter")
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=shipped_store_path("demo"))
    ap.add_argument("--figures-store", type=Path, default=shipped_store_path("kernelbench"))
    ap.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(screens(args.store, args.out)):
        print(f"wrote {path}")
    from click.testing import CliRunner

    from kbm_toolkit.cli import cli

    with tempfile.TemporaryDirectory() as tmp:
        result = CliRunner().invoke(cli, ["--store", str(args.figures_store), "report", "--out", tmp,
                                          "-a", "kernelbench", "-a", "kbv", "-a", "fuzz"])
        if result.exit_code:
            raise SystemExit(result.output)
        for name in FIGURES:
            for found in Path(tmp).glob(f"{name}.png"):
                shutil.copy(found, args.out / f"figure-{name.replace('_', '-')}.png")
                print(f"wrote figure {name}")


if __name__ == "__main__":
    main()
