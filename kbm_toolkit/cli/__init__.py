"""The `kbm` command: a thin skin over the library. Each command parses, calls, and prints."""

from kbm_toolkit.cli.group import cli, main

__all__ = ["cli", "main"]
