"""Identifier case conversion: snake_case, kebab-case, camelCase, PascalCase."""

from __future__ import annotations

import re

# An acronym (not followed by a lowercase letter), a capitalised or lowercase
# word, or a run of digits.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def split_words(text: str) -> list[str]:
    """Split an identifier or phrase into its words.

    Splits on anything that is not a letter or digit and on case changes:
    ``"HTTPServerError"`` -> ``["HTTP", "Server", "Error"]``,
    ``"version2_final"`` -> ``["version", "2", "final"]``.
    """
    return _WORD.findall(text)


def to_snake(text: str) -> str:
    """``"parseHTTPResponse"`` -> ``"parse_http_response"``."""
    return "_".join(word.lower() for word in split_words(text))


def to_kebab(text: str) -> str:
    """``"parseHTTPResponse"`` -> ``"parse-http-response"``."""
    return "-".join(word.lower() for word in split_words(text))


def to_constant(text: str) -> str:
    """``"parseHTTPResponse"`` -> ``"PARSE_HTTP_RESPONSE"``."""
    return "_".join(word.upper() for word in split_words(text))


def _capitalize(word: str, keep_acronyms: bool) -> str:
    if keep_acronyms and len(word) > 1 and word.isupper():
        return word
    return word[:1].upper() + word[1:].lower()


def to_pascal(text: str, keep_acronyms: bool = False) -> str:
    """``"parse_http_response"`` -> ``"ParseHttpResponse"``.

    With ``keep_acronyms``, words that are all capitals stay so:
    ``"parse HTTP response"`` -> ``"ParseHTTPResponse"``.
    """
    return "".join(_capitalize(word, keep_acronyms) for word in split_words(text))


def to_camel(text: str, keep_acronyms: bool = False) -> str:
    """``"parse_http_response"`` -> ``"parseHttpResponse"``; the first word is always lowercase."""
    words = split_words(text)
    if not words:
        return ""
    rest = "".join(_capitalize(word, keep_acronyms) for word in words[1:])
    return words[0].lower() + rest


_STYLES = {
    "snake": to_snake,
    "kebab": to_kebab,
    "constant": to_constant,
    "pascal": to_pascal,
    "camel": to_camel,
}


def convert_case(text: str, style: str) -> str:
    """Convert ``text`` to ``style``: one of snake, kebab, constant, pascal or camel."""
    try:
        convert = _STYLES[style.lower()]
    except KeyError:
        known = ", ".join(sorted(_STYLES))
        raise ValueError(f"unknown case style {style!r} (expected one of: {known})") from None
    return convert(text)
