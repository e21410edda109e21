"""shelf: a small stock-keeping library."""

from shelf.inventory import Inventory, InventoryError
from shelf.pricing import apply_discount, format_price, price_with_tax

__all__ = ["Inventory", "InventoryError", "apply_discount", "format_price", "price_with_tax"]
