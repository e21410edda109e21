"""URL slugs: ASCII, lowercase words joined by a separator."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable

# Letters that Unicode does not decompose into an ASCII base letter plus accents.
_TRANSLITERATE = {
    "ß": "ss",
    "æ": "ae",
    "Æ": "AE",
    "ø": "o",
    "Ø": "O",
    "œ": "oe",
    "Œ": "OE",
    "ł": "l",
    "Ł": "L",
    "đ": "d",
    "Đ": "D",
    "þ": "th",
    "Þ": "TH",
}

_APOSTROPHES = re.compile(r"['\u2019]")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _to_ascii(text: str) -> str:
    text = "".join(_TRANSLITERATE.get(ch, ch) for ch in text)
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def _shorten(slug: str, separator: str, max_length: int) -> str:
    """Cut ``slug`` to ``max_length`` characters without splitting a word, if possible."""
    if len(slug) <= max_length:
        return slug
    head = slug[:max_length]
    at_boundary = slug[max_length:].startswith(separator)
    if separator and not at_boundary and separator in head:
        head = head[: head.rindex(separator)]
    while separator and head.endswith(separator):
        head = head[: -len(separator)]
    return head


def slugify(
    text: str,
    separator: str = "-",
    max_length: int | None = None,
    lowercase: bool = True,
    stopwords: Iterable[str] = (),
) -> str:
    """Turn ``text`` into a URL slug.

    Accented letters become their ASCII base letters, apostrophes are dropped
    ("don't" -> "dont") and every other run of non-alphanumeric characters
    becomes one ``separator``. Words in ``stopwords`` (case-insensitive) are
    left out. With ``max_length`` the slug is cut at a word boundary when it
    can be, and a single over-long word is cut hard.
    """
    if max_length is not None and max_length < 0:
        raise ValueError("max_length must be non-negative")
    text = _APOSTROPHES.sub("", _to_ascii(text))
    words = [word for word in _NOT_ALNUM.split(text) if word]
    stop = {word.lower() for word in stopwords}
    if stop:
        words = [word for word in words if word.lower() not in stop]
    if lowercase:
        words = [word.lower() for word in words]
    slug = separator.join(words)
    if max_length is not None:
        slug = _shorten(slug, separator, max_length)
    return slug


def unique_slug(text: str, existing: Collection[str], separator: str = "-", **options) -> str:
    """Slugify ``text`` and append ``-2``, ``-3``, ... until it is not in ``existing``."""
    base = slugify(text, separator=separator, **options)
    if not base:
        raise ValueError(f"cannot make a slug from {text!r}")
    if base not in existing:
        return base
    n = 2
    while f"{base}{separator}{n}" in existing:
        n += 1
    return f"{base}{separator}{n}"
