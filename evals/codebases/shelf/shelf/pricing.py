"""Prices in cents."""

from __future__ import annotations

TAX_RATE = 0.2


def price_with_tax(cents: int, rate: float = TAX_RATE) -> int:
    return round(cents * (1 + rate))


def apply_discount(cents: int, percent: float) -> int:
    if not 0 <= percent <= 100:
        raise ValueError(f"discount must be between 0 and 100, got {percent}")
    return round(cents * (100 - percent) / 100)


def format_price(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"
