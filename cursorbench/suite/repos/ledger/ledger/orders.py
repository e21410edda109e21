"""Orders: lines priced from the inventory, discounts, and checkout."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from .inventory import Inventory, InventoryError, OutOfStock
from .money import to_money

if TYPE_CHECKING:
    from .discounts import Discount


class OrderError(InventoryError):
    """The order cannot be changed or checked out."""


@dataclass(frozen=True)
class OrderLine:
    sku: str
    name: str
    quantity: int
    unit_price: Decimal

    @property
    def subtotal(self) -> Decimal:
        return to_money(self.unit_price * self.quantity)


class Order:
    """A basket of items from one inventory; stock is only taken at checkout."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self._lines: dict[str, OrderLine] = {}
        self.discounts: list[Discount] = []
        self.checked_out = False

    def _check_open(self) -> None:
        if self.checked_out:
            raise OrderError("order is already checked out")

    def add(self, sku: str, quantity: int = 1) -> OrderLine:
        """Add ``quantity`` units of ``sku`` at the current inventory price."""
        self._check_open()
        if quantity <= 0:
            raise OrderError("quantity must be positive")
        item = self.inventory.get(sku)
        wanted = self.quantity_of(sku) + quantity
        if wanted > item.quantity:
            raise OutOfStock(f"only {item.quantity} of {sku!r} in stock, order needs {wanted}")
        line = self._lines.get(sku)
        if line is None:
            line = OrderLine(sku, item.name, wanted, item.unit_price)
        else:
            line = replace(line, quantity=wanted)
        self._lines[sku] = line
        return line

    def remove(self, sku: str) -> None:
        self._check_open()
        self._lines.pop(sku, None)

    @property
    def lines(self) -> list[OrderLine]:
        """Lines in the order they were first added."""
        return list(self._lines.values())

    def quantity_of(self, sku: str) -> int:
        line = self._lines.get(sku)
        return line.quantity if line else 0

    def apply(self, discount: Discount) -> None:
        self._check_open()
        self.discounts.append(discount)

    def subtotal(self) -> Decimal:
        return sum((line.subtotal for line in self._lines.values()), Decimal("0.00"))

    def discount_total(self) -> Decimal:
        """What all discounts take off together, never more than the subtotal."""
        total = sum((d.amount(self) for d in self.discounts), Decimal("0.00"))
        return min(total, self.subtotal())

    def total(self) -> Decimal:
        return self.subtotal() - self.discount_total()

    def checkout(self) -> Decimal:
        """Take the ordered units out of stock (all or nothing) and return the total."""
        self._check_open()
        if not self._lines:
            raise OrderError("cannot check out an empty order")
        for line in self._lines.values():
            if line.quantity > self.inventory.get(line.sku).quantity:
                raise OutOfStock(f"{line.sku!r} no longer has {line.quantity} units in stock")
        total = self.total()
        for line in self._lines.values():
            self.inventory.remove(line.sku, line.quantity, reason="sold")
        self.checked_out = True
        return total
