"""`ast.parse` for code that may run on several threads at once (graders, builders), and
that may be anything an agent wrote.

CPython 3.11 keeps the AST constructor's recursion depth in state shared by every thread;
two threads building trees at once can make a parse fail with `SystemError: AST
constructor recursion depth mismatch` (python/cpython#106905, fixed in later releases).
A grader that hit it scored an attempt as an infrastructure error. Every parse in the
harness goes through this lock instead.

Source that Python cannot build a tree for (nesting too deep for its recursion limit, a
NUL byte, which 3.11 reports as ValueError, or too big for memory) is, to every caller, a
source that does not parse: a `SyntaxError`, which the callers already handle.
"""

from __future__ import annotations

import ast
import threading

_PARSING = threading.Lock()


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, one thread at a time; SyntaxError for any source it
    cannot turn into a tree."""
    with _PARSING:
        try:
            return ast.parse(source, filename=filename)
        except (RecursionError, ValueError, MemoryError) as error:
            raise SyntaxError(f"cannot be parsed: {type(error).__name__}: {error}") from None
