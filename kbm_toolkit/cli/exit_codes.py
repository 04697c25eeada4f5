"""Exit codes of the `kbm` command: one enum, one meaning each (docs/exit-codes.md)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What a `kbm` process's exit status means, in precedence order for one run."""

    OK = 0
    """Everything asked for was done and passed."""
    USAGE = 2
    """Bad command line (Click's own usage-error code)."""
    BAD_INPUT = 3
    """A problem, substrate, rule or protocol file is malformed or missing."""
    GATE_FAILED = 4
    """A correct substrate failed its own gate: fix the substrate before trusting any score."""
    NO_DEVICE = 5
    """The command needs a CUDA device and none is visible."""
    RUN_INCOMPLETE = 6
    """An evaluation left problems unfinished (e.g. the correct substrate failed on an input)."""
    BELOW_THRESHOLD = 7
    """`kbm audit --fail-under PCT`: the protocol detects fewer witnessed mutants than PCT."""
    CANNOT_WRITE = 8
    """An output file or folder cannot be written (permissions, a file in the way, a full disk)."""
    REJECTED = 9
    """`kbm verify`: some protocol rejects some submission."""
    INTERNAL = 70
    """A bug in kbm: please report it with the traceback."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C or SIGINT (128 + 2, as shells report it); what was done is stored."""
    PIPE_CLOSED = 141
    """The reader of its output went away (`kbm mutants | head`): stopped quietly (128 + SIGPIPE's 13)."""
