"""A problem file's module-level size constants: read without running the file, and overridden.

KernelBench's files define their sizes as plain arithmetic on literals (`batch_size = 16`,
`dim = 16384`); reading them statically needs neither torch nor the file's imports.
"""

from __future__ import annotations

import ast
import operator
from functools import lru_cache
from typing import Any

_CONSTANT_TYPES = (int, float, bool)



def constant_names(tree: ast.Module) -> list[str]:
    """Names a module assigns at its top level (tuple targets included), in order."""
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [e.id for e in elements if isinstance(e, ast.Name)]
    return names


def override_constants(tree: ast.Module, overrides: dict[str, Any]) -> ast.Module:
    """Rewrite the module so each overridden constant is assigned its new value where it is defined.

    Constants computed from it later in the file (`bias_shape = (out_channels, 1, 1)`) then follow.
    Chained (`h = w = 128`) and tuple (`d, h, w = 8, 16, 16`) assignments are split per name.
    """
    body: list[ast.stmt] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            body.append(node)
            continue
        pairs: list[tuple[ast.expr, ast.expr]] = []
        for target in node.targets:
            if (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                    and len(target.elts) == len(node.value.elts)):
                pairs += list(zip(target.elts, node.value.elts))
            else:
                pairs.append((target, node.value))
        if not any(isinstance(t, ast.Name) and t.id in overrides for t, _ in pairs):
            body.append(node)
            continue
        for target, value in pairs:
            if isinstance(target, ast.Name) and target.id in overrides:
                v = overrides[target.id]
                value = ast.Constant(tuple(v) if isinstance(v, list) else v)  # TOML arrays are lists
            body.append(ast.copy_location(ast.Assign(targets=[target], value=value), node))
    tree = ast.Module(body=body, type_ignores=[])
    return ast.fix_missing_locations(tree)


_DYNAMIC_READS = frozenset({"globals", "vars", "locals", "eval", "exec"})
"""Calls through which code can read a module constant that no name in it spells."""


@lru_cache(maxsize=1024)
def model_constants(source: str) -> frozenset[str] | None:
    """The module constants a problem's reference model can depend on: those that any code but
    `get_inputs` reads (the model's class, `get_init_inputs`, helpers), and those their values are
    computed from. None when reading the names cannot tell: the file reads its globals dynamically
    (`globals()`, `eval`), calls `get_inputs` from elsewhere, or `get_inputs` assigns a global.

    The other constants (most often `batch_size`) shape only the inputs: specs that differ in
    those alone can share one model, which in KernelBench's large GEMMs is seconds of CPU to build.
    """
    tree = ast.parse(source)
    computed_from: dict[str, set[str]] = {}
    read: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "get_inputs":
            if any(isinstance(n, ast.Global) for n in ast.walk(node)):
                return None  # what it assigns there, the model may read
            continue
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        calls = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        if calls & _DYNAMIC_READS or "get_inputs" in names:
            return None
        targets = _plain_targets(node)
        if targets:
            for name in targets:
                computed_from.setdefault(name, set()).update(names)
        else:
            read |= names
    needed, frontier = set(), read
    while frontier:  # a constant the model reads may be computed from others: those count too
        needed |= frontier
        frontier = {n for name in frontier for n in computed_from.get(name, ())} - needed
    return frozenset(needed & set(constant_names(tree)))


def _plain_targets(node: ast.stmt) -> list[str]:
    """The names a top-level assignment binds when it binds only names; [] for any other statement."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    else:
        return []
    names: list[str] = []
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(e, ast.Name) for e in elements):
            return []  # an attribute or item assigned: a statement whose reads count as the model's
        names += [e.id for e in elements]
    return names


_STATIC_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
               ast.USub: operator.neg, ast.UAdd: operator.pos}


@lru_cache(maxsize=1024)
def static_constants(source: str) -> dict[str, Any] | None:
    """The module constants as running the file would leave them, or None when that needs running it."""
    tree = ast.parse(source)
    env: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            continue  # defines nothing a constant could depend on
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            return None  # a loop, an augmented assignment...: only running the file tells
        try:
            value = _static_value(node.value, env)
        except (KeyError, TypeError, ValueError, ArithmeticError):
            return None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts) \
                    and isinstance(value, (tuple, list)) and len(value) == len(target.elts):
                env.update({e.id: v for e, v in zip(target.elts, value)})
            else:
                return None
    return {name: env[name] for name in constant_names(tree) if is_constant_value(env.get(name))}


def _static_value(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _STATIC_OPS:
        return _STATIC_OPS[type(node.op)](_static_value(node.operand, env))
    if isinstance(node, ast.BinOp) and type(node.op) in _STATIC_OPS:
        return _STATIC_OPS[type(node.op)](_static_value(node.left, env), _static_value(node.right, env))
    if isinstance(node, (ast.Tuple, ast.List)):
        values = [_static_value(e, env) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    raise ValueError("not plain arithmetic on literals")


def is_constant_value(value: Any) -> bool:
    """Whether a value is a size constant: a number, a bool, or a tuple or list of them."""
    if isinstance(value, _CONSTANT_TYPES):
        return True
    return isinstance(value, (tuple, list)) and all(isinstance(v, _CONSTANT_TYPES) for v in value)
