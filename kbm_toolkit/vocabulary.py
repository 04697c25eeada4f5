"""kbm's words: one enum per vocabulary the store, the CLI and the reports share.

Each value is the string the store holds, so a row compares equal to its member
(`row["status"] == MutantStatus.DISTINCT`) and the CLI's choices are the enum's values.
"""

from __future__ import annotations

import enum


class Word(str, enum.Enum):
    """A vocabulary word: formats and prints as its value."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def values(cls) -> list[str]:
        """Every word, in declaration order (a CLI option's choices)."""
        return [m.value for m in cls]


class MutantStatus(Word):
    """What screening and the probe made of a mutant."""

    COMPILE_ERROR = "compile_error"
    """NVRTC (or Python, for a launcher mutant) rejected the mutated source: nothing to run."""
    EQUIVALENT = "equivalent"
    """Its compiled image and launcher equal the original's: no input can tell them apart."""
    DUPLICATE = "duplicate"
    """Its image and launcher equal an earlier mutant's (`duplicate_of`): only that one runs."""
    DISTINCT = "distinct"
    """A fault of its own: evaluated on every input, and counted once witnessed."""
    QUARANTINED = "quarantined"
    """Crashed or hung on the tiny probe input: killed at every tolerance, never run again
    (stores before schema m012 called it `crash_probe`)."""


class Outcome(Word):
    """The outcome of one evaluation of a kernel on one input: a cell's, or an input check's."""

    PASS = "pass"
    """Finite, same shape; the margin decides any tolerance."""
    VALUE = "value"
    """Finite, same shape, but the margin exceeds the tolerance it was judged at."""
    NONFINITE = "nonfinite"
    """A NaN anywhere, or an infinity the other side lacks: allclose fails at every tolerance."""
    SHAPE = "shape"
    """Output shape (or type) differs from the reference's."""
    CRASH = "crash"
    """The launch raised or the worker died."""
    TIMEOUT = "timeout"
    """The launch overran its deadline and the worker was killed."""


class Accounting(Word):
    """Which tolerance a denominator protocol's inputs witness mutants at, for one protocol's score."""

    TOLERANCE = "tolerance"
    """At the scored protocol's own tolerance: a mutant counts against a check at 1e-2 only where
    some valid input shows it off by more than 1e-2 (the paper's accounting; the default)."""
    UNION = "union"
    """Each denominator protocol at its own tolerance: a mutant that only a 1e-4 check sees counts
    against a 1e-2 check too (kbm's only accounting before 2026-12-03)."""


STOPPING_OUTCOMES = (Outcome.CRASH, Outcome.TIMEOUT)
"""Cell outcomes after which a mutant is not run on its problem's other inputs."""

SAME_CODE, OTHER_CODE = 1, 0
"""A shape verdict's `same` where the mutant runs the original's machine code at the shape
(`kbm equivalence`): no values there can witness it; and where it runs other code (NULL: undecided)."""

OUT_OF_MEMORY = "OutOfMemoryError"
"""How the note of a crash cell begins where the launch found the GPU's memory full twice: other
workers' tensors, not the mutant (no rule changes what a launcher allocates). Such a cell is no
measurement: scoring reads it as absent, and the next run measures it again and supersedes it."""

REFERENCE_RAISED = "reference raised"
"""How a stored check's note begins where the reference raised on the input: the input tests
nothing, and the next run or refcheck tries it again."""


class GateStatus(Word):
    """The gate's verdict on a substrate."""

    PASSED = "passed"
    """Within tolerance of its reference on every gate input: it may be mutated."""
    FAILED = "failed"
    """Wrong on some input: fix the substrate."""
    ERROR = "error"
    """Could not be run at all (a launch error, every reference unusable)."""
    UNREFEREEABLE = "unrefereeable"
    """The reference is random, constant, or misses its own fp64 evaluation on an official input."""
    COMPILE_ERROR = "compile_error"
    """NVRTC rejected the substrate's source."""


class RunKind(Word):
    """What a run in the store's `runs` table did."""

    GATE = "gate"
    """`kbm gate`: substrates against their references."""
    EVALUATE = "evaluate"
    """`kbm run`: cells of the kill matrix."""
    CHECK = "check"
    """Input checks only (no mutant), as `kbm targets` measures validity ceilings."""
    REFCHECK = "refcheck"
    """`kbm refcheck`: references against their fp64 evaluation."""
    VERIFY = "verify"
    """`kbm verify`: submissions judged on protocols' inputs."""


class RecordKind(Word):
    """The kinds of record an evaluation streams from its workers to the parent."""

    INPUT = "input"
    """An input was built and checked: the correct kernel's verdict on it (its validity)."""
    REBUILT = "rebuilt"
    """An input checked before was built again (after a restart): only its time is news."""
    MARGINS = "margins"
    """Margins added to a stored input check (against another reference environment, say)."""
    START = "start"
    """A mutant's launch on an input begins: a crash or overrun from here is charged to it."""
    CELL = "cell"
    """One (mutant, input) result."""
    POISONED = "poisoned"
    """A CUDA error left the worker's context unusable: a fresh worker takes over."""
    UNBUILT = "unbuilt"
    """An input could not be built for lack of GPU memory, twice: it stays unchecked, and the
    problem's other inputs go on."""
    QUARANTINE = "quarantine"
    """A mutant crashed or hung on the probe input."""
    PROBLEM = "problem"
    """A problem is finished, with its verdict."""
    TIME = "time"
    """Worker time spent outside any cell (waiting for a spare, a compile, a lost launch)."""
    LOADED = "loaded"
    """`kbm verify`: a submission's file was executed, defining `ModelNew`, or saying why not."""


class SubmissionStatus(Word):
    """What became of a submission file itself, apart from any input."""

    READY = "ready"
    """Parsed, and defines `ModelNew`: its inputs decide it."""
    MALFORMED = "malformed"
    """A syntax error, or no `ModelNew`: nothing was run, every protocol rejects it."""
    LOAD_ERROR = "load_error"
    """Executing the file (its imports, an inline extension's compile) raised, crashed or hung:
    every protocol rejects it."""


class Verdict(Word):
    """A protocol's verdict on a submission."""

    ACCEPTS = "accepts"
    """Every input of the protocol passes as the protocol compares."""
    REJECTS = "rejects"
    """Some input fails (wrong values, non-finite, wrong shape, a crash or a hang), or the file
    does not load."""
    INCOMPLETE = "incomplete"
    """No input failed, but some have no stored result yet: run `kbm verify` again to finish."""


class Family(Word):
    """The six fault families of the rule inventory, in the paper's order."""

    ARITHMETIC = "arithmetic"
    INDEXING = "indexing"
    SEMANTIC = "semantic"
    BOUNDARY = "boundary"
    SYNCHRONIZATION = "synchronization"
    PRECISION = "precision"


FAMILIES = tuple(f.value for f in Family)
"""The family names, in taxonomy order."""


QUARTILES = 4
"""How finely a whole network's depth is cut: its placed mutants by quartile (`depth_quartile`)."""


def depth_quartile(position: int, launches: int) -> int:
    """The quartile of depth of launch `position` of a forward's `launches`: 0 at the input end."""
    return QUARTILES * position // launches
