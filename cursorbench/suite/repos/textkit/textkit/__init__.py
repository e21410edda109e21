"""textkit: small, dependency-free text helpers."""

from .case import convert_case, split_words, to_camel, to_constant, to_kebab, to_pascal, to_snake
from .slug import slugify, unique_slug
from .truncate import truncate, truncate_middle
from .wrap import fill, wrap

__all__ = [
    "convert_case",
    "fill",
    "slugify",
    "split_words",
    "to_camel",
    "to_constant",
    "to_kebab",
    "to_pascal",
    "to_snake",
    "truncate",
    "truncate_middle",
    "unique_slug",
    "wrap",
]

__version__ = "0.3.1"
