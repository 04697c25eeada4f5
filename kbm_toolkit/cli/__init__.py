"""The `kbm` command."""

from kbm_toolkit.cli.commands import cli, main

__all__ = ["cli", "main"]
