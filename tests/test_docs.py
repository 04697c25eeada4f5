"""Docs that can drift from the code are generated or checked here."""

from __future__ import annotations

import pytest

from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode

from support import REPO, load_script


GENERATOR = "dev/gen_cli_docs.py"


def _generator():
    return load_script(GENERATOR)


@pytest.mark.skipif(not (REPO / GENERATOR).is_file(), reason="dev/ is in no sdist: test from a checkout")
def test_cli_reference_is_current() -> None:
    page = (REPO / "docs" / "cli.md").read_text()
    assert page == _generator().render(), "docs/cli.md is stale: run python dev/gen_cli_docs.py"


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_is_in_the_readme(command: str) -> None:
    assert f"kbm {command}" in (REPO / "README.md").read_text()


@pytest.mark.parametrize("code", list(ExitCode))
def test_every_exit_code_is_documented(code: ExitCode) -> None:
    page = (REPO / "docs" / "exit-codes.md").read_text()
    assert f"| {int(code)} | `{code.name}` |" in page
