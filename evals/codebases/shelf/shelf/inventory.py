"""Stock levels by SKU."""

from __future__ import annotations


class InventoryError(Exception):
    """A stock operation that cannot be done."""


class Inventory:
    def __init__(self) -> None:
        self._stock: dict[str, int] = {}

    def add(self, sku: str, quantity: int) -> None:
        if quantity <= 0:
            raise InventoryError(f"quantity must be positive, got {quantity}")
        self._stock[sku] = self._stock.get(sku, 0) + quantity

    def remove(self, sku: str, quantity: int) -> None:
        available = self._stock.get(sku, 0)
        if quantity > available:
            raise InventoryError(f"only {available} of {sku} in stock")
        self._stock[sku] = available - quantity

    def count(self, sku: str) -> int:
        return self._stock.get(sku, 0)

    def skus(self) -> list[str]:
        return sorted(sku for sku, quantity in self._stock.items() if quantity > 0)
