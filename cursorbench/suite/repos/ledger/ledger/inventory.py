"""Items in stock and the movements that changed them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from .money import to_money


class InventoryError(Exception):
    """Base class for inventory problems."""


class UnknownItem(InventoryError):
    """No item has the given SKU."""


class OutOfStock(InventoryError):
    """Not enough units in stock."""


@dataclass
class Item:
    sku: str
    name: str
    unit_price: Decimal
    quantity: int = 0

    @property
    def value(self) -> Decimal:
        return to_money(self.unit_price * self.quantity)


@dataclass(frozen=True)
class Movement:
    """One change of stock: ``change`` is positive for units in, negative for units out."""

    sku: str
    change: int
    reason: str


def _check_quantity(quantity: int) -> None:
    if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity < 0:
        raise InventoryError(f"quantity must be a non-negative integer, not {quantity!r}")


class Inventory:
    """Items by SKU, plus the list of every stock movement, oldest first."""

    def __init__(self) -> None:
        self._items: dict[str, Item] = {}
        self.movements: list[Movement] = []

    def add(
        self,
        sku: str,
        name: str,
        unit_price: Decimal | int | float | str,
        quantity: int = 1,
        reason: str = "received",
    ) -> Item:
        """Receive ``quantity`` units; a new SKU creates the item, a known one updates its price.

        >>> stock = Inventory()
        >>> stock.add("A1", "apple", "0.5", 10)
        Item(sku='A1', name='apple', unit_price=Decimal('0.50'), quantity=10)
        >>> stock.add("A1", "apple", 1).quantity
        11
        """
        sku = sku.strip()
        if not sku:
            raise InventoryError("sku must not be empty")
        _check_quantity(quantity)
        price = to_money(unit_price)
        if price < 0:
            raise InventoryError(f"unit price must not be negative: {price}")
        item = self._items.get(sku)
        if item is None:
            item = self._items[sku] = Item(sku, name, price, 0)
        elif item.name != name:
            raise InventoryError(f"sku {sku!r} is already used for {item.name!r}")
        item.unit_price = price
        if quantity:
            item.quantity += quantity
            self.movements.append(Movement(sku, quantity, reason))
        return item

    def remove(self, sku: str, quantity: int = 1, reason: str = "removed") -> Item:
        """Take ``quantity`` units out of stock; the item stays known at zero.

        >>> stock = Inventory()
        >>> _ = stock.add("A1", "apple", 1, 3)
        >>> stock.remove("A1", 3).quantity
        0
        >>> stock.remove("A1")
        Traceback (most recent call last):
        ...
        ledger.inventory.OutOfStock: only 0 of 'A1' in stock, 1 requested
        """
        _check_quantity(quantity)
        item = self.get(sku)
        if quantity > item.quantity:
            raise OutOfStock(f"only {item.quantity} of {sku!r} in stock, {quantity} requested")
        if quantity:
            item.quantity -= quantity
            self.movements.append(Movement(sku, -quantity, reason))
        return item

    def get(self, sku: str) -> Item:
        try:
            return self._items[sku]
        except KeyError:
            raise UnknownItem(f"no item with sku {sku!r}") from None

    def __contains__(self, sku: object) -> bool:
        return sku in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        """Items sorted by SKU."""
        return iter(sorted(self._items.values(), key=lambda item: item.sku))

    def total_quantity(self) -> int:
        return sum(item.quantity for item in self._items.values())

    def total_value(self) -> Decimal:
        """The stock's worth: each item's price times its units, summed.

        >>> stock = Inventory()
        >>> _ = stock.add("A1", "apple", "0.25", 3), stock.add("B2", "pear", 2, 1)
        >>> stock.total_value()
        Decimal('2.75')
        """
        return sum((item.value for item in self._items.values()), Decimal("0.00"))

    def low_stock(self, threshold: int = 5) -> list[Item]:
        """Items with at most ``threshold`` units, sorted by SKU.

        >>> stock = Inventory()
        >>> _ = stock.add("B2", "pear", 1, 2), stock.add("A1", "apple", 1, 9)
        >>> [item.sku for item in stock.low_stock()]
        ['B2']
        >>> [item.sku for item in stock.low_stock(threshold=9)]
        ['A1', 'B2']
        """
        return [item for item in self if item.quantity <= threshold]

    def search(self, text: str) -> list[Item]:
        """Items whose name contains ``text``, ignoring case, sorted by SKU.

        >>> stock = Inventory()
        >>> _ = stock.add("A1", "Green Apple", 1), stock.add("A2", "apple pie", 3)
        >>> [item.name for item in stock.search("APPLE")]
        ['Green Apple', 'apple pie']
        """
        needle = text.casefold()
        return [item for item in self if needle in item.name.casefold()]

    def history(self, sku: str) -> list[Movement]:
        return [movement for movement in self.movements if movement.sku == sku]
