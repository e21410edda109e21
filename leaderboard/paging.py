"""Paging for the dashboard's lists: `?page=N&per=M` (1-based), LIMIT/OFFSET in the query,
and the links between pages.

A page reads `per` rows (at most `MAX_PER`) and a count; never the whole list. Not covered
here: what is listed (the views).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request

from leaderboard.pages import e

MAX_PER = 500


@dataclass(frozen=True)
class Paging:
    page: int  # 1-based
    per: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per

    def last_page(self, total: int) -> int:
        return max(1, -(-total // self.per))


def paging_of(request: Request, per: int = 50, prefix: str = "") -> Paging:
    """The page asked for by `?{prefix}page=N&{prefix}per=M`; bad values fall back."""
    return Paging(
        page=max(1, _int(request.query_params.get(f"{prefix}page"), 1)),
        per=min(MAX_PER, max(1, _int(request.query_params.get(f"{prefix}per"), per))),
    )


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def page_links(request: Request, paging: Paging, total: int, prefix: str = "") -> str:
    """`rows A-B of N` and links to the first, previous, next and last page (and a few
    around this one), keeping every other query parameter."""
    last = paging.last_page(total)
    params = {k: v for k, v in request.query_params.items() if k != f"{prefix}page"}

    def href(number: int) -> str:
        return "?" + urlencode(params | {f"{prefix}page": str(number)})

    def link(number: int, label: str, rel: str = "") -> str:
        if number == paging.page or not 1 <= number <= last:
            return f"<span class='here'>{e(label)}</span>" if number == paging.page else ""
        extra = f' rel="{rel}"' if rel else ""
        return f'<a href="{e(href(number))}" data-page="{number}"{extra}>{e(label)}</a>'

    first_row = min(total, paging.offset + 1)
    last_row = min(total, paging.offset + paging.per)
    near = sorted({1, last, *range(max(1, paging.page - 2), min(last, paging.page + 2) + 1)})
    numbers = " ".join(link(n, str(n)) for n in near)
    links = " ".join(
        part
        for part in (
            link(paging.page - 1, "previous", "prev"),
            numbers,
            link(paging.page + 1, "next", "next"),
        )
        if part
    )
    name = f"{prefix}paging" if prefix else "paging"
    return (
        f"<p class='paging' id='{e(name)}'>rows {first_row}-{last_row} of {total:,} · "
        f"page {paging.page} of {last} · {links}</p>"
    )
