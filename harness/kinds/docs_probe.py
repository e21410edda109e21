"""Inside the grading sandbox: do a documented function's docstring examples call it?

Run by the `docs` kind as `python -P -c <this file's text> REPORT ROOT MODULE NAME...`
with a nonce on stdin (read before any of the agent's code runs). It imports the
module as the change left it, and for each name runs the examples of its docstring (as
written in the source) with a profiler that counts calls of that function's own code
objects: an example counts only by running it, so `>>> if False: f()` calls nothing. It
writes one JSON object to REPORT: `{"nonce": ..., "names": {NAME: {"calls": N,
"problem": ...}}}`. Standard library only; whether the examples' output is right is the
pytest run's business (the doctest items), not this one's.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import inspect
import json
import os
import sys
import threading
import types
from typing import Any


def _summary(error: BaseException) -> str:
    try:
        text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    except Exception:
        text = ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def module_name(root: str, module_file: str) -> tuple[str, str]:
    """(the folder to import from, the dotted module name): packages climbed like pytest."""
    parts = module_file.removesuffix(".py").split("/")
    base = os.path.join(root, *parts[:-1])
    names = [parts[-1]]
    while os.path.isfile(os.path.join(base, "__init__.py")) and base != root:
        names.insert(0, os.path.basename(base))
        base = os.path.dirname(base)
    return base, ".".join(names)


def definition(module: ast.Module, dotted: str) -> ast.AST | None:
    body: list[ast.stmt] = module.body
    node: ast.AST | None = None
    for part in dotted.split("."):
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        node = next((n for n in body if isinstance(n, kinds) and n.name == part), None)
        if node is None:
            return None
        body = getattr(node, "body", [])
    return node


def _functions(value: Any) -> list[types.FunctionType]:
    """The Python functions behind a documented object (wrappers unwrapped)."""
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    if isinstance(value, property):
        parts = (value.fget, value.fset, value.fdel)
        return [function for part in parts if part is not None for function in _functions(part)]
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, type):
        found = []
        for member in vars(value).values():
            if isinstance(member, type):
                continue
            found += _functions(member)
        return found
    if callable(value):
        with contextlib.suppress(ValueError):
            value = inspect.unwrap(value)
    return [value] if isinstance(value, types.FunctionType) else []


def target(module: types.ModuleType, dotted: str) -> Any:
    value: Any = module
    for part in dotted.split("."):
        value = inspect.getattr_static(value, part)
    return value


def probe(module: types.ModuleType, tree: ast.Module, dotted: str, filename: str) -> dict:
    """{"calls": how often running the docstring's examples called it, "problem": ...}."""
    node = definition(tree, dotted)
    if node is None:
        return {"calls": 0, "problem": "not defined any more"}
    docstring = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
    if not docstring:
        return {"calls": 0, "problem": "no docstring"}
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError as error:
        return {"calls": 0, "problem": f"its docstring's examples do not parse: {_summary(error)}"}
    if not examples:
        return {"calls": 0, "problem": "no example in its docstring"}
    try:
        functions = _functions(target(module, dotted))
    except AttributeError:
        return {"calls": 0, "problem": "not defined when the module runs"}
    codes = {id(function.__code__) for function in functions}
    if not codes:
        return {"calls": 0, "problem": "not a Python function: its calls cannot be seen"}
    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and type(frame) is types.FrameType and id(frame.f_code) in codes:
            calls[0] += 1

    lineno = getattr(node, "lineno", 0)
    test = doctest.DocTest(examples, dict(vars(module)), dotted, filename, lineno, docstring)
    runner = doctest.DocTestRunner(verbose=False)
    threading.setprofile(count)
    sys.setprofile(count)
    try:
        runner.run(test, out=lambda text: None, clear_globs=True)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return {"calls": calls[0], "problem": None}


def main(argv: list[str]) -> None:
    report, root, module_file, *names = argv
    nonce = sys.stdin.readline().strip()
    results: dict[str, dict] = {}
    try:
        with open(os.path.join(root, module_file), encoding="utf-8") as file:
            tree = ast.parse(file.read(), module_file)
        base, name = module_name(root, module_file)
        sys.path[:0] = [base, root]
        module = importlib.import_module(name)
    except BaseException as error:  # the agent's module: anything, SystemExit included
        problem = f"the module does not import: {_summary(error)}"
        results = {dotted: {"calls": 0, "problem": problem} for dotted in names}
    else:
        for dotted in names:
            try:
                results[dotted] = probe(module, tree, dotted, module_file)
            except BaseException as error:
                results[dotted] = {"calls": 0, "problem": f"its examples broke: {_summary(error)}"}
    with open(report, "w", encoding="utf-8") as out:
        out.write(json.dumps({"nonce": nonce, "names": results}))


if __name__ == "__main__":
    main(sys.argv[1:])
