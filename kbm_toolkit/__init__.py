"""kbm: measure GPU-kernel benchmark checkers by mutation analysis."""

__version__ = "0.1.0"
