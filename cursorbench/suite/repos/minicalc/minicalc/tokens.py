"""Turning source text into tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import TokenizeError

NUMBER = "NUMBER"
NAME = "NAME"
OP = "OP"
LPAREN = "LPAREN"
RPAREN = "RPAREN"
COMMA = "COMMA"
EOF = "EOF"

OPERATORS = "+-*/%^="

_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SINGLE = {"(": LPAREN, ")": RPAREN, ",": COMMA}


@dataclass(frozen=True)
class Token:
    kind: str
    value: str
    pos: int

    def is_op(self, *ops: str) -> bool:
        return self.kind == OP and self.value in ops


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens, ending with an EOF token.

    Raises TokenizeError for characters that cannot start a token and for
    numbers directly followed by a letter (``2x``).
    """
    tokens: list[Token] = []
    pos = 0
    while pos < len(source):
        ch = source[pos]
        if ch.isspace():
            pos += 1
            continue
        if ch.isdigit() or (ch == "." and source[pos + 1 : pos + 2].isdigit()):
            match = _NUMBER.match(source, pos)
            assert match is not None
            end = match.end()
            if end < len(source) and (source[end].isalpha() or source[end] in "._"):
                raise TokenizeError(f"malformed number {source[pos : end + 1]!r}", pos)
            tokens.append(Token(NUMBER, match.group(), pos))
            pos = end
        elif ch.isalpha() or ch == "_":
            match = _NAME.match(source, pos)
            assert match is not None
            tokens.append(Token(NAME, match.group(), pos))
            pos = match.end()
        elif ch in OPERATORS:
            tokens.append(Token(OP, ch, pos))
            pos += 1
        elif ch in _SINGLE:
            tokens.append(Token(_SINGLE[ch], ch, pos))
            pos += 1
        else:
            raise TokenizeError(f"unexpected character {ch!r}", pos)
    tokens.append(Token(EOF, "", pos))
    return tokens
