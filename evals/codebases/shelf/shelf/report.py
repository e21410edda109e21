"""Text reports of an inventory."""

from __future__ import annotations

from shelf.inventory import Inventory


def stock_lines(inventory: Inventory) -> list[str]:
    return [f"{sku}: {inventory.count(sku)}" for sku in inventory.skus()]


def low_stock(inventory: Inventory, threshold: int = 5) -> list[str]:
    return [sku for sku in inventory.skus() if inventory.count(sku) < threshold]
