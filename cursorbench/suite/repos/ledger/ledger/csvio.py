"""Reading and writing an inventory as CSV (columns: sku, name, unit_price, quantity)."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path
from typing import IO

from .inventory import Inventory, InventoryError
from .money import to_money

FIELDS = ("sku", "name", "unit_price", "quantity")


class CsvFormatError(ValueError):
    """A CSV file that cannot be imported; ``line`` is its 1-based line number."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def export_csv(inventory: Inventory, fp: IO[str]) -> int:
    """Write a header and one row per item, sorted by SKU; return the number of items."""
    writer = csv.writer(fp, lineterminator="\n")
    writer.writerow(FIELDS)
    count = 0
    for item in inventory:
        writer.writerow([item.sku, item.name, f"{item.unit_price:.2f}", item.quantity])
        count += 1
    return count


def _parse_row(row: dict[str, str], line: int) -> tuple[str, str, Decimal, int]:
    values = {field: (row.get(field) or "").strip() for field in FIELDS}
    if not values["sku"]:
        raise CsvFormatError(line, "missing sku")
    try:
        price = to_money(values["unit_price"])
    except ValueError:
        raise CsvFormatError(line, f"invalid unit_price {values['unit_price']!r}") from None
    try:
        quantity = int(values["quantity"])
    except ValueError:
        raise CsvFormatError(line, f"invalid quantity {values['quantity']!r}") from None
    if price < 0 or quantity < 0:
        raise CsvFormatError(line, "unit_price and quantity must not be negative")
    return values["sku"], values["name"], price, quantity


def import_csv(fp: IO[str], inventory: Inventory | None = None) -> Inventory:
    """Read items from CSV into ``inventory`` (a new one by default) and return it.

    Extra columns are ignored; rows for a SKU already seen add to its quantity.
    The whole file is checked before anything is added, so a bad row leaves
    ``inventory`` unchanged.
    """
    inventory = Inventory() if inventory is None else inventory
    reader = csv.DictReader(fp)
    missing = [field for field in FIELDS if field not in (reader.fieldnames or [])]
    if missing:
        raise CsvFormatError(1, f"missing column(s): {', '.join(missing)}")
    rows = [(reader.line_num, _parse_row(row, reader.line_num)) for row in reader]
    staged = Inventory()
    for item in inventory:
        staged.add(item.sku, item.name, item.unit_price, item.quantity)
    for line, (sku, name, price, quantity) in rows:
        try:
            staged.add(sku, name, price, quantity)
        except InventoryError as exc:
            raise CsvFormatError(line, str(exc)) from None
    for _, (sku, name, price, quantity) in rows:
        inventory.add(sku, name, price, quantity, reason="imported")
    return inventory


def save_csv(inventory: Inventory, path: str | Path) -> int:
    with open(path, "w", encoding="utf-8", newline="") as fp:
        return export_csv(inventory, fp)


def load_csv(path: str | Path, inventory: Inventory | None = None) -> Inventory:
    with open(path, encoding="utf-8", newline="") as fp:
        return import_csv(fp, inventory)
