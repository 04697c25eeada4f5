"""Structure of source text that rules need: what is code (not comment or string), where loop
headers and conditions are, which function a position lies in. CUDA for kernels, Python for
launchers (comments and strings only)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_PY_TOKEN = re.compile(r'#[^\n]*|"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_HEADER = re.compile(r"\b(for|if|while)\s*\(")


@dataclass(frozen=True)
class Span:
    start: int
    end: int

    def contains(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end


class CudaSource:
    """A device source with comments and literals masked out, and its control headers indexed."""

    def __init__(self, text: str, language: str = "cuda") -> None:
        self.text = text
        self._token = _PY_TOKEN if language == "python" else _TOKEN

    @cached_property
    def code(self) -> str:
        """The text with comments and string/char literals replaced by spaces (newlines kept)."""
        return self._token.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), self.text)

    @cached_property
    def _masked(self) -> list[Span]:
        return [Span(m.start(), m.end()) for m in self._token.finditer(self.text)]

    def is_code(self, start: int, end: int) -> bool:
        """Whether [start, end) touches no comment or literal."""
        return not any(s.start < end and start < s.end for s in self._masked)

    @cached_property
    def headers(self) -> dict[str, list[Span]]:
        """The parenthesised part of every `for (...)`, `if (...)` and `while (...)`."""
        found: dict[str, list[Span]] = {"for": [], "if": [], "while": []}
        for m in _HEADER.finditer(self.code):
            close = self.matching(m.end() - 1, "(", ")")
            if close is not None:
                found[m.group(1)].append(Span(m.end(), close))
        return found

    def inside(self, kind: str, start: int, end: int) -> bool:
        """Whether [start, end) lies inside a `loop-header` (for) or `condition` (if/while)."""
        kinds = {"loop-header": ("for",), "condition": ("if", "while")}[kind]
        return any(span.contains(start, end) for k in kinds for span in self.headers[k])

    @cached_property
    def functions(self) -> list[Span]:
        """Bodies of top-level functions: `{ ... }` blocks at brace depth zero."""
        bodies, depth, opened = [], 0, 0
        for i, ch in enumerate(self.code):
            if ch == "{":
                if depth == 0:
                    opened = i
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    bodies.append(Span(opened, i + 1))
        return bodies

    def function_at(self, pos: int) -> str:
        """The code of the function body holding `pos` (empty outside any)."""
        for span in self.functions:
            if span.start <= pos < span.end:
                return self.code[span.start:span.end]
        return ""

    def line_of(self, pos: int) -> tuple[int, int]:
        """1-based line and column of `pos`."""
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, col

    def line_text(self, pos: int) -> str:
        """The code (masked) of the line holding `pos`."""
        start = self.code.rfind("\n", 0, pos) + 1
        end = self.code.find("\n", pos)
        return self.code[start:end if end >= 0 else len(self.code)]

    def matching(self, open_at: int, opening: str, closing: str) -> int | None:
        """Where the `closing` that balances the `opening` at `open_at` is, in code (None: nowhere)."""
        depth = 0
        for i in range(open_at, len(self.code)):
            if self.code[i] == opening:
                depth += 1
            elif self.code[i] == closing:
                depth -= 1
                if depth == 0:
                    return i
        return None
