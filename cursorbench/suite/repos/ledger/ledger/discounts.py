"""Discounts: each computes how much it takes off an order."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING

from .money import to_money

if TYPE_CHECKING:
    from .orders import Order


def _check_percent(percent: Decimal | int | str) -> Decimal:
    value = Decimal(str(percent))
    if not 0 < value <= 100:
        raise ValueError(f"percent must be in (0, 100], not {percent!r}")
    return value


class Discount(ABC):
    @abstractmethod
    def amount(self, order: Order) -> Decimal:
        """The money this discount takes off ``order`` (never negative)."""


class PercentageDiscount(Discount):
    """``percent`` off every line, or only off the lines whose SKU is in ``skus``."""

    def __init__(self, percent: Decimal | int | str, skus: Iterable[str] | None = None) -> None:
        self.percent = _check_percent(percent)
        self.skus = None if skus is None else frozenset(skus)

    def amount(self, order: Order) -> Decimal:
        base = sum(
            (line.subtotal for line in order.lines if self.skus is None or line.sku in self.skus),
            Decimal("0.00"),
        )
        return to_money(base * self.percent / 100)


class FixedDiscount(Discount):
    """A fixed amount off orders whose subtotal is at least ``min_subtotal``."""

    def __init__(self, off: Decimal | int | str, min_subtotal: Decimal | int | str = 0) -> None:
        self.off = to_money(off)
        self.min_subtotal = to_money(min_subtotal)
        if self.off <= 0:
            raise ValueError("a fixed discount must be positive")

    def amount(self, order: Order) -> Decimal:
        subtotal = order.subtotal()
        if subtotal < self.min_subtotal:
            return Decimal("0.00")
        return min(self.off, subtotal)


class BulkDiscount(Discount):
    """``percent`` off the line for ``sku`` when it has at least ``min_quantity`` units."""

    def __init__(self, sku: str, min_quantity: int, percent: Decimal | int | str) -> None:
        if min_quantity < 1:
            raise ValueError("min_quantity must be at least 1")
        self.sku = sku
        self.min_quantity = min_quantity
        self.percent = _check_percent(percent)

    def amount(self, order: Order) -> Decimal:
        total = Decimal("0.00")
        for line in order.lines:
            if line.sku == self.sku and line.quantity >= self.min_quantity:
                total += to_money(line.subtotal * self.percent / 100)
        return total


class BuyXGetYFree(Discount):
    """For every ``buy`` units of ``sku`` paid for, the next ``free`` units cost nothing.

    Buy 2 get 1 free on 7 units: two complete groups of three, so 2 units are
    free; the last unit is paid for.
    """

    def __init__(self, sku: str, buy: int, free: int = 1) -> None:
        if buy < 1 or free < 1:
            raise ValueError("buy and free must both be at least 1")
        self.sku = sku
        self.buy = buy
        self.free = free

    def amount(self, order: Order) -> Decimal:
        total = Decimal("0.00")
        for line in order.lines:
            if line.sku == self.sku:
                free_units = line.quantity // (self.buy + self.free) * self.free
                total += to_money(line.unit_price * free_units)
        return total


class BestOf(Discount):
    """Only the most generous of ``discounts`` applies (for offers that don't stack)."""

    def __init__(self, *discounts: Discount) -> None:
        if not discounts:
            raise ValueError("BestOf needs at least one discount")
        self.discounts = discounts

    def amount(self, order: Order) -> Decimal:
        return max(discount.amount(order) for discount in self.discounts)
