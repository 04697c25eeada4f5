"""Typed errors: the library raises these, the CLI words them as one line and an exit code."""

from __future__ import annotations

from pathlib import Path


class KbmError(Exception):
    """Base of every error kbm reports to a user: what went wrong, and where."""

    def __init__(self, message: str, where: str | Path | None = None) -> None:
        self.message = message
        self.where = str(where) if where is not None else None
        super().__init__(self.line())

    def line(self) -> str:
        """The one line a user sees."""
        return f"{self.where}: {self.message}" if self.where else self.message


def one_line(e: BaseException) -> str:
    """Any exception as one line: a KbmError's own, else its type and message."""
    return e.line() if isinstance(e, KbmError) else f"{type(e).__name__}: {e}"


class ProblemError(KbmError):
    """A problem file is missing, malformed, or its reference fails."""


class MissingCheckout(ProblemError):
    """An input needs a checkout of another project (KernelBench-Verified's hidden tests) that was not given."""


class SubstrateError(KbmError):
    """A substrate folder is missing or breaks the substrate contract."""


class CompileError(KbmError):
    """NVRTC rejected a source; `log` holds the compiler's output."""

    def __init__(self, message: str, where: str | Path | None = None, log: str = "") -> None:
        self.log = log
        super().__init__(message, where)


class LaunchError(KbmError):
    """A launcher called a kernel with arguments that do not fit its signature."""


class ContractViolation(SubstrateError):
    """A launcher computed with torch instead of leaving the arithmetic to its kernels."""


class NoDevice(KbmError):
    """The work needs a CUDA device and none is visible."""


class StoreError(KbmError):
    """The store cannot be opened or is of an unknown schema version."""


class OutputError(KbmError):
    """An output file or folder cannot be written (permissions, a file in the way, a full disk)."""


class OptionError(KbmError):
    """Options that contradict each other or do not apply: a usage error, worded by the library."""
