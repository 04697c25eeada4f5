"""The console kbm prints its tables through: Rich's, except that a closed pipe reaches the CLI's handler."""

from __future__ import annotations

from rich.console import Console


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # Rich would exit 1 on its own; raising lets every command end with the one documented code (141)
        raise BrokenPipeError


def console(width: int = 0, stderr: bool = False) -> Console:
    """A console without highlighting, at least `width` columns wide even when piped."""
    out = _Console(highlight=False, stderr=stderr)
    out.width = max(out.width, width)
    return out
