"""Cyclomatic complexity per function, counted over the AST (McCabe's count, as radon does
for the usual constructs): 1 plus one per branch point. Pure; no I/O."""

from __future__ import annotations

import ast

BRANCHES = (
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ExceptHandler,
    ast.comprehension,
    ast.match_case,
)


def complexity(node: ast.AST) -> int:
    """1 + branch points in `node`, not counting nested function or class bodies."""
    count = 1
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(child, BRANCHES):
            count += 1 + (len(child.ifs) if isinstance(child, ast.comprehension) else 0)
        elif isinstance(child, ast.BoolOp):
            count += len(child.values) - 1
        stack.extend(ast.iter_child_nodes(child))
    return count
