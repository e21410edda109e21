"""Errors raised by minicalc; all derive from CalcError."""

from __future__ import annotations


class CalcError(Exception):
    """A problem with an expression; ``pos`` is the offset in the source, if known."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message if pos is None else f"{message} at position {pos}")
        self.message = message
        self.pos = pos


class TokenizeError(CalcError):
    """The source contains a character or number that cannot be read."""


class ParseError(CalcError):
    """The tokens do not form a valid statement."""


class EvalError(CalcError):
    """The statement is valid but cannot be computed (unknown name, division by zero...)."""
