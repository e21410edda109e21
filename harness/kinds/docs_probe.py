"""Inside the grading sandbox: do a documented function's docstring examples show it?

Run by the `docs` kind as `python -P -c <this file's text> REPORT ROOT MODULE NAME...`
with a nonce on stdin (read before any of the agent's code runs). It imports the
module as the change left it, and for each name runs the examples of its docstring (as
written in the source) three times: once as they are, with a profiler that counts the
calls of that function's own code objects each example makes (`>>> if False: f()`
makes none), then once under each stand-in (`STAND_INS`: the function's code swapped
for code with its parameters that returns a fresh object, or raises a fresh exception).
An example shows the function when it runs once the function was called (by it or an
earlier example) and its expected output no longer matches under every stand-in
(checked as leniently as pytest commonly is: `...`, whitespace, exception details,
`u''` prefixes): what it shows depends on the function's result or effect. A documented
exception class is, besides, swapped in the module for a fresh exception class. `>>> try:
f(x)` / `... except Exception: pass`, `>>> _ = f(x)` then `>>> print(3)`, or an expected
`...` show nothing. A call returning None shown as no
output does show it (`>>> add_star(G, [0, 1])`: a stand-in's object would be printed).
Whether the examples pass as written is the pytest run's business (the doctest items,
under the task's own options). It writes one JSON object to REPORT: `{"nonce": ...,
"names": {NAME: {"calls": N, "shown": M, "problem": ...}}}`. Standard library only.

The runs share the module's state (a module-level cache the first run fills is still
full in the next); a stand-in run still going after `STAND_IN_TIMEOUT_S` (plus three
times the first run's time) is stopped, and its examples count as failed. Not defended:
an example that inspects the code it calls (`f.__code__.co_code`) rather than what it
returns; the stand-in keeps the name, parameters, file and first line, not the rest.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import inspect
import json
import os
import re
import sys
import threading
import time
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


STAND_INS = ("returns another object", "raises")
STAND_IN_TIMEOUT_S = 2.0
# at least as lenient as pytest's doctest options commonly are: a want that pytest would
# match to a stand-in's output matches here too, so such an example shows nothing
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
_MARK = "__docs_probe_stand_in__"  # a constant of the stand-in's code, swapped for the value
_PREFIXED = re.compile(r"(\W|^)[uUbB]([rR]?['\"])")  # pytest's ALLOW_UNICODE, ALLOW_BYTES


class _StandInTimeout(Exception):
    """A stand-in run that did not finish: its examples' output changed."""


class _Other:
    """What the `returns another object` stand-in returns: equal to nothing else."""

    def __repr__(self) -> str:
        return f"<stand-in {id(self):x}>"


def parameters(code: types.CodeType) -> str:
    """`code`'s parameter list as source (`a, /, b, *args, c, **kwargs`)."""
    names, flags = code.co_varnames, code.co_flags
    positional, only, keyword = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    found = [*names[:only], *(["/"] if only else []), *names[only:positional]]
    rest = positional + keyword
    if flags & inspect.CO_VARARGS:
        found.append(f"*{names[rest]}")
        rest += 1
    elif keyword:
        found.append("*")
    found += names[positional : positional + keyword]
    if flags & inspect.CO_VARKEYWORDS:
        found.append(f"**{names[rest]}")
    return ", ".join(found)


def stand_in_code(code: types.CodeType, how: str) -> types.CodeType:
    """Code for a function with `code`'s parameters and free variables (so it fits the
    function's defaults and closure) that returns a fresh object or raises a fresh
    exception."""
    free = code.co_freevars
    body = f"return {_MARK!r}" if how == "returns another object" else f"raise {_MARK!r}"
    lines = ["def outer():", *(f"    {name} = None" for name in free),
             f"    def stand_in({parameters(code)}):"]  # fmt: skip
    if free:
        lines.append("        " + ", ".join(free) + ",")
    lines += [f"        {body}", "    return stand_in"]
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), code.co_filename, "exec"), namespace)
    inner: types.CodeType = namespace["outer"]().__code__
    error = type(f"StandIn{os.urandom(4).hex()}Error", (Exception,), {})
    value: Any = _Other() if how == "returns another object" else error
    consts = tuple(value if c == _MARK else c for c in inner.co_consts)
    return inner.replace(co_consts=consts, co_name=code.co_name, co_qualname=code.co_qualname,
                         co_firstlineno=code.co_firstlineno)  # fmt: skip


class _Checker(doctest.OutputChecker):
    """doctest's checker, with pytest's `u'...'` and `b'...'` prefixes ignored."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        if super().check_output(want, got, optionflags):
            return True
        return super().check_output(
            _PREFIXED.sub(r"\1\2", want), _PREFIXED.sub(r"\1\2", got), optionflags
        )


class _Recorder(doctest.DocTestRunner):
    """A runner that notes which example runs now and which examples failed (their output
    or exception not the expected one)."""

    def __init__(self) -> None:
        super().__init__(checker=_Checker(), verbose=False, optionflags=FLAGS)
        self.failed: set[int] = set()
        self.current = -1

    def report_start(self, out: Any, test: Any, example: Any) -> None:
        self.current = next(i for i, e in enumerate(test.examples) if e is example)

    def report_failure(self, out: Any, test: Any, example: Any, got: Any) -> None:
        self.failed.add(id(example))

    def report_unexpected_exception(self, out: Any, test: Any, example: Any, exc: Any) -> None:
        self.failed.add(id(example))


def _copy(test: doctest.DocTest) -> doctest.DocTest:
    return doctest.DocTest(test.examples, dict(test.globs), test.name, test.filename,
                           test.lineno, test.docstring)  # fmt: skip


def exception_name(module: types.ModuleType, dotted: str) -> str | None:
    """`dotted` when it names an exception class of the module itself, else None."""
    value = vars(module).get(dotted)
    return dotted if isinstance(value, type) and issubclass(value, BaseException) else None


def under_stand_in(
    test: doctest.DocTest,
    functions: list[types.FunctionType],
    how: str,
    limit: float,
    swapped: tuple[types.ModuleType, str] | None = None,
) -> list[bool]:
    """Per example, whether it failed with each function's code swapped for a stand-in (and
    the `swapped` module's exception class for a fresh one); a run past `limit` seconds is
    stopped (a tracer's check, raised in the examples' own code, never in the runner's)
    and its examples count as failed."""
    saved = [function.__code__ for function in functions]
    runner = _Recorder()
    copy = _copy(test)
    module, name = swapped or (None, "")
    original = getattr(module, name, None)
    if module is not None:
        fresh = type(f"StandIn{os.urandom(4).hex()}Error", (Exception,), {})
        setattr(module, name, fresh)
        copy.globs[name] = fresh
    deadline = time.monotonic() + limit

    def check(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == doctest.__file__:
            return None  # never raised inside the runner's own bookkeeping
        if time.monotonic() > deadline:
            raise _StandInTimeout
        return check

    try:
        for function in functions:
            function.__code__ = stand_in_code(function.__code__, how)
        sys.settrace(check)
        runner.run(copy, out=lambda text: None, clear_globs=True)
    except _StandInTimeout:
        return [True] * len(test.examples)
    finally:
        sys.settrace(None)
        for function, code in zip(functions, saved, strict=True):
            function.__code__ = code
        if module is not None:
            setattr(module, name, original)
    return [id(example) in runner.failed for example in test.examples]


def _nothing(problem: str) -> dict:
    return {"calls": 0, "shown": 0, "problem": problem}


def probe(module: types.ModuleType, tree: ast.Module, dotted: str, filename: str) -> dict:
    """{"calls": how often running the docstring's examples called it, "shown": how many
    examples, run once it was called (by them or an earlier one), fail under every
    stand-in, "problem": ...}."""
    node = definition(tree, dotted)
    if node is None:
        return _nothing("not defined any more")
    docstring = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
    if not docstring:
        return _nothing("no docstring")
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError as error:
        return _nothing(f"its docstring's examples do not parse: {_summary(error)}")
    if not examples:
        return _nothing("no example in its docstring")
    try:
        functions = _functions(target(module, dotted))
    except AttributeError:
        return _nothing("not defined when the module runs")
    codes = {id(function.__code__) for function in functions}
    if not codes:
        return _nothing("not a Python function: its calls cannot be seen")
    runner = _Recorder()
    calls = [0] * len(examples)

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and type(frame) is types.FrameType and id(frame.f_code) in codes:
            calls[runner.current] += 1

    lineno = getattr(node, "lineno", 0)
    test = doctest.DocTest(examples, dict(vars(module)), dotted, filename, lineno, docstring)
    started = time.monotonic()
    threading.setprofile(count)
    sys.setprofile(count)
    try:
        runner.run(_copy(test), out=lambda text: None, clear_globs=True)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    limit = STAND_IN_TIMEOUT_S + 3 * (time.monotonic() - started)
    shown = [sum(calls[: i + 1]) > 0 for i in range(len(calls))]  # called by now
    for how in STAND_INS if any(shown) else ():
        swapped = (module, name) if (name := exception_name(module, dotted)) else None
        changed = under_stand_in(test, functions, how, limit, swapped)
        shown = [was and now for was, now in zip(shown, changed, strict=True)]
    return {"calls": sum(calls), "shown": sum(shown), "problem": None}


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
        results = {dotted: _nothing(problem) for dotted in names}
    else:
        for dotted in names:
            try:
                results[dotted] = probe(module, tree, dotted, module_file)
            except BaseException as error:
                results[dotted] = _nothing(f"its examples broke: {_summary(error)}")
    with open(report, "w", encoding="utf-8") as out:
        out.write(json.dumps({"nonce": nonce, "names": results}))


if __name__ == "__main__":
    main(sys.argv[1:])
