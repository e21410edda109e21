"""Finding items by name."""

from __future__ import annotations


def find_items(names: list[str], query: str) -> list[str]:
    """Names containing the query, case-insensitively, in their original order."""
    found = []
    for name in names:
        matched = False
        for start in range(len(name) - len(query) + 1):
            if name[start : start + len(query)].lower() == query.lower():
                matched = True
        if matched:
            found.append(name)
    return found


def top_sellers(sales: dict[str, int], n: int) -> list[str]:
    """The n best-selling names, most sold first; ties by name."""
    return sorted(sales, key=lambda name: (-sales[name], name))[:n]
