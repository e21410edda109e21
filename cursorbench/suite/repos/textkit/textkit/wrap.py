"""Greedy word wrapping."""

from __future__ import annotations

import re

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def wrap(
    text: str,
    width: int = 70,
    indent: str = "",
    subsequent_indent: str | None = None,
    break_long_words: bool = True,
) -> list[str]:
    """Wrap ``text`` into lines of at most ``width`` characters.

    Runs of whitespace collapse to a single space. ``indent`` starts the first
    line and ``subsequent_indent`` (by default the same as ``indent``) every
    other one. A word longer than a whole line is split across lines when
    ``break_long_words`` is true; otherwise it gets a line of its own, which is
    then longer than ``width``.
    """
    if subsequent_indent is None:
        subsequent_indent = indent
    if width <= max(len(indent), len(subsequent_indent)):
        raise ValueError("width must be larger than the indentation")

    lines: list[str] = []
    line, empty = indent, True
    for word in text.split():
        while True:
            room = width - len(line) - (0 if empty else 1)
            if len(word) <= room:
                line = line + word if empty else f"{line} {word}"
                empty = False
                break
            if not empty:
                lines.append(line)
                line, empty = subsequent_indent, True
                continue
            if not break_long_words:
                lines.append(line + word)
                line, empty = subsequent_indent, True
                break
            lines.append(line + word[:room])
            word = word[room:]
            line, empty = subsequent_indent, True
    if not empty:
        lines.append(line)
    return lines


def fill(text: str, width: int = 70, **options) -> str:
    """Wrap each paragraph of ``text`` (paragraphs are separated by blank lines).

    Returns the wrapped paragraphs joined by one blank line. ``options`` are
    passed on to :func:`wrap`.
    """
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(text.strip()) if p.strip()]
    return "\n\n".join("\n".join(wrap(p, width, **options)) for p in paragraphs)
