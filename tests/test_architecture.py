"""The house keeps its shape: layers (import-linter's contracts), no import cycle at any scope, a thin
CLI with no SQL, and short functions where the logic is densest."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kbm_toolkit"


def _graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("kbm_toolkit")
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _squashed(edges: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The import graph among the direct children of `package` (a child stands for everything in it)."""
    depth = package.count(".") + 1

    def child(module: str) -> str | None:
        parts = module.split(".")
        return ".".join(parts[:depth + 1]) if module.startswith(package + ".") else None

    out: dict[str, set[str]] = defaultdict(set)
    for module, imported in edges.items():
        a = child(module)
        for other in imported:
            b = child(other)
            if a and b and a != b:
                out[a].add(b)
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_modules() -> None:
    assert _cycles(_graph()) == []


def test_no_import_cycle_among_the_children_of_any_package() -> None:
    edges = _graph()
    packages = sorted({m for m in edges if any(o.startswith(m + ".") for o in edges)})
    assert "kbm_toolkit.store" in packages and "kbm_toolkit" in packages
    for package in packages:
        assert _cycles(_squashed(edges, package)) == [], package


def test_the_layers_contracts_hold() -> None:
    # the contracts are pyproject.toml's [tool.importlinter]; `lint-imports` prints which one breaks, and how
    code = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    result = subprocess.run([sys.executable, "-c", code, "--no-cache"], capture_output=True, text=True,
                            cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("KEPT") == 4


def _functions(folder: Path) -> list[tuple[int, str]]:
    rows = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                rows.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"))
    return rows


@pytest.mark.parametrize("folder", ["cli", "evaluation"])
def test_no_function_is_longer_than_sixty_lines(folder: str) -> None:
    long = [f"{where} ({n} lines)" for n, where in _functions(PACKAGE / folder) if n > 60]
    assert long == []


_SQL = re.compile(r"\.db\[|\.db\.(execute|query|conn)|\bselect\b.+\bfrom\b|\.execute\(|\bsqlite3\b", re.I)


def test_sql_lives_in_the_store_package_only() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "store"):
            continue
        code = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
        offenders += [f"{path.relative_to(PACKAGE)}: {line.strip()}" for line in code if _SQL.search(line)]
    assert offenders == []
