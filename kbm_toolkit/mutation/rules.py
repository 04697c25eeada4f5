"""Mutation rules as data: `rules/*.toml` (kbm's, and each pack's), each a deterministic regex rewrite in one
fault family.

```toml
[[rule]]
name = "plus2minus"
family = "arithmetic"
description = "AOR: + -> -"
pattern = '(?<=[\\w)\\]])(\\s*)\\+(\\s*)(?=[\\w(])'
replacement = '\\1-\\2'
target = "kernel"                # or "launcher" (launch.py: grid and block arithmetic)
fixup = ["include-fp16"]         # paired edits the rewrite needs to compile
[rule.guard]                     # every key optional; all must hold at a site
inside = "loop-header"           # or "condition" (if/while parentheses)
not_inside = "condition"
line_matches = 'acc'             # the site's line must match
line_excludes = '__syncthreads'  # ... and must not match
function_matches = 'sdata'       # the enclosing function body must match
function_excludes = 'atomicAdd'
source_matches = '__shared__'    # the whole file must match, else the rule does not apply
```

Every match of `pattern` in code (never in a comment or a string literal) that passes the guard
is one site; each site yields one mutant. A replacement that leaves the text unchanged is no site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from kbm_toolkit.mutation.cuda_source import CudaSource
from kbm_toolkit.errors import KbmError
from kbm_toolkit.paths import data_dir
from kbm_toolkit.problems.pack import user_packs
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.substrate import FILES, has_substrate, substrate_for
from kbm_toolkit.tomlfile import load_toml
from kbm_toolkit.vocabulary import FAMILIES

REGIONS = ("loop-header", "condition")
_GUARD_KEYS = {"inside", "not_inside", "line_matches", "line_excludes", "function_matches",
               "function_excludes", "source_matches"}
_RULE_KEYS = {"name", "family", "description", "pattern", "replacement", "target", "fixup", "guard",
              "origin"}
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class RuleError(KbmError):
    """A rule file is malformed: names the file, the rule and the reason."""


def _include_fp16(text: str) -> str:
    if re.search(r"#include\s*<cuda_fp16\.h>", text):
        return text
    return "#include <cuda_fp16.h>\n" + text


FIXUPS: dict[str, Callable[[str], str]] = {"include-fp16": _include_fp16}
"""Paired edits a rule may ask for after its one-site rewrite (they never change behaviour alone)."""


@dataclass(frozen=True)
class Site:
    """One place a rule rewrites: the span in the original text and what replaces it."""

    start: int
    end: int
    original: str
    replacement: str
    line: int
    col: int


@dataclass(frozen=True)
class Rule:
    """One deterministic rewrite."""

    name: str
    family: str
    description: str
    pattern: re.Pattern[str]
    replacement: str
    target: str = "kernel"
    fixup: tuple[str, ...] = ()
    guard: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    """Where the rule comes from: `appendix-b` (the paper's inventory) or `mutgpu`."""
    file: str = ""

    def sites(self, text: str) -> Iterator[Site]:
        """Every site of this rule in `text`, in order."""
        source = CudaSource(text, "python" if self.target == "launcher" else "cuda")
        g = self.guard
        if "source_matches" in g and not re.search(g["source_matches"], source.code):
            return
        for m in self.pattern.finditer(source.code):
            start, end = m.span()
            if not source.is_code(start, end):
                continue
            if "inside" in g and not source.inside(g["inside"], start, end):
                continue
            if "not_inside" in g and source.inside(g["not_inside"], start, end):
                continue
            line = source.line_text(start)
            if "line_matches" in g and not re.search(g["line_matches"], line):
                continue
            if "line_excludes" in g and re.search(g["line_excludes"], line):
                continue
            body = source.function_at(start) if {"function_matches", "function_excludes"} & set(g) else ""
            if "function_matches" in g and not re.search(g["function_matches"], body):
                continue
            if "function_excludes" in g and re.search(g["function_excludes"], body):
                continue
            original = text[start:end]
            replacement = m.expand(self.replacement)
            if replacement == original:
                continue
            yield Site(start, end, original, replacement, *source.line_of(start))

    def apply(self, text: str, site: Site) -> str:
        """`text` with `site` rewritten and the rule's fix-ups applied."""
        out = text[:site.start] + site.replacement + text[site.end:]
        for name in self.fixup:
            out = FIXUPS[name](out)
        return out


def rule_files() -> list[Path]:
    """The shipped `rules/*.toml`, then every loaded pack's (`user_packs`)."""
    return [*sorted(data_dir("rules").glob("*.toml")), *(f for pack in user_packs() for f in pack.rule_files())]


def load_rules(paths: list[Path] | None = None) -> list[Rule]:
    """Every rule in `paths` (default: `rule_files()`, kbm's and the packs'), validated, in file order;
    a name used twice is a RuleError naming the later file."""
    files = paths if paths is not None else rule_files()
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path in files:
        data = load_toml(path)
        extra = set(data) - {"rule"}
        if extra:
            raise RuleError(f"unknown top-level key {sorted(extra)[0]!r} (expected [[rule]] tables)", path)
        for i, entry in enumerate(data.get("rule", [])):
            rule = _parse(entry, path, i)
            if rule.name in seen:
                raise RuleError(f"rule {rule.name!r}: name already used in {seen[rule.name]}", path)
            seen[rule.name] = str(path)
            rules.append(rule)
    return rules


def _parse(entry: dict[str, Any], path: Path, index: int) -> Rule:
    name = entry.get("name")
    label = f"rule {name!r}" if isinstance(name, str) else f"rule #{index + 1}"

    def fail(reason: str) -> RuleError:
        return RuleError(f"{label}: {reason}", path)

    for key in ("name", "family", "description", "pattern", "replacement"):
        if not isinstance(entry.get(key), str):
            raise fail(f"missing or non-string key {key!r}")
    if not _NAME.match(name):
        raise fail("name must be lower-case words joined by '-'")
    unknown = set(entry) - _RULE_KEYS
    if unknown:
        raise fail(f"unknown key {sorted(unknown)[0]!r}")
    if entry["family"] not in FAMILIES:
        raise fail(f"family must be one of {', '.join(FAMILIES)}, got {entry['family']!r}")
    target = entry.get("target", "kernel")
    if target not in FILES:
        raise fail(f"target must be 'kernel' or 'launcher', got {target!r}")
    try:
        pattern = re.compile(entry["pattern"], re.M)
    except re.error as e:
        raise fail(f"pattern is not a valid regular expression: {e}") from None
    try:
        _check_template(pattern, entry["replacement"])
    except re.error as e:
        raise fail(f"replacement refers to a group the pattern lacks: {e}") from None
    fixup = entry.get("fixup", [])
    if isinstance(fixup, str):
        fixup = [fixup]
    for f in fixup:
        if f not in FIXUPS:
            raise fail(f"unknown fixup {f!r} (known: {', '.join(FIXUPS)})")
    guard = entry.get("guard", {})
    if not isinstance(guard, dict):
        raise fail("guard must be a table")
    for key, value in guard.items():
        if key not in _GUARD_KEYS:
            raise fail(f"unknown guard key {key!r} (known: {', '.join(sorted(_GUARD_KEYS))})")
        if key in ("inside", "not_inside"):
            if value not in REGIONS:
                raise fail(f"guard {key} must be one of {', '.join(REGIONS)}, got {value!r}")
        else:
            try:
                re.compile(value)
            except (re.error, TypeError) as e:
                raise fail(f"guard {key} is not a valid regular expression: {e}") from None
    return Rule(name, entry["family"], entry["description"], pattern, entry["replacement"], target,
                tuple(fixup), dict(guard), entry.get("origin", ""), str(path))


def _check_template(pattern: re.Pattern[str], template: str) -> None:
    """Refuse a template that names a group the pattern does not have."""
    for ref in re.findall(r"\\(\d+)|\\g<(\w+)>", template):
        number, named = ref
        if number and int(number) > pattern.groups:
            raise re.error(f"invalid group reference {number}")
        if named and not named.isdigit() and named not in pattern.groupindex:
            raise re.error(f"unknown group name {named!r}")
        if named and named.isdigit() and int(named) > pattern.groups:
            raise re.error(f"invalid group reference {named}")


def site_counts(rules: list[Rule], problems: ProblemSet) -> tuple[dict[str, int], int]:
    """Rule name -> how many sites it has over every substrate of `problems`, and how many substrates
    that is (no compiling: `kbm rules --sites`)."""
    substrates = [substrate_for(p) for p in problems.select() if has_substrate(p)]
    return {r.name: sum(len(list(r.sites(s.file(r.target)))) for s in substrates) for r in rules}, len(substrates)
