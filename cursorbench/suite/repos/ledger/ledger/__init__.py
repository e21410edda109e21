"""ledger: an in-memory stock ledger with orders and discounts."""

from .csvio import CsvFormatError, export_csv, import_csv, load_csv, save_csv
from .discounts import (
    BestOf,
    BulkDiscount,
    BuyXGetYFree,
    Discount,
    FixedDiscount,
    PercentageDiscount,
)
from .inventory import Inventory, InventoryError, Item, Movement, OutOfStock, UnknownItem
from .money import to_money
from .orders import Order, OrderError, OrderLine

__all__ = [
    "BestOf",
    "BulkDiscount",
    "BuyXGetYFree",
    "CsvFormatError",
    "Discount",
    "FixedDiscount",
    "Inventory",
    "InventoryError",
    "Item",
    "Movement",
    "Order",
    "OrderError",
    "OrderLine",
    "OutOfStock",
    "PercentageDiscount",
    "UnknownItem",
    "export_csv",
    "import_csv",
    "load_csv",
    "save_csv",
    "to_money",
]
