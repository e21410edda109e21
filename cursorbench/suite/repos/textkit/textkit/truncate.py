"""Shortening text to a fixed length."""

from __future__ import annotations


def truncate(text: str, length: int, suffix: str = "...", whole_words: bool = True) -> str:
    """Shorten ``text`` to at most ``length`` characters, ending in ``suffix``.

    Text that already fits is returned unchanged. With ``whole_words`` the cut
    moves back to the last whitespace instead of splitting a word (unless the
    first word alone is too long).
    """
    if length < len(suffix):
        raise ValueError("length must be at least the length of the suffix")
    if len(text) <= length:
        return text
    room = length - len(suffix)
    head = text[:room]
    if whole_words and not text[room].isspace():
        cut = max(head.rfind(" "), head.rfind("\t"), head.rfind("\n"))
        if cut > 0:
            head = head[:cut]
    return head.rstrip() + suffix


def truncate_middle(text: str, length: int, marker: str = "...") -> str:
    """Shorten ``text`` to ``length`` characters by replacing its middle with ``marker``.

    Useful for paths and identifiers whose both ends matter. The head gets the
    extra character when the room left is odd.
    """
    if length < len(marker) + 2:
        raise ValueError("length must leave room for the marker and one character each side")
    if len(text) <= length:
        return text
    room = length - len(marker)
    head = (room + 1) // 2
    tail = room // 2
    return text[:head] + marker + text[len(text) - tail :]
