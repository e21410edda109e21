from decimal import Decimal

import pytest

from ledger import Inventory, InventoryError, Movement, OutOfStock, UnknownItem


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add("A-1", "Apple", "0.50", 10)
    inventory.add("B-2", "Banana", "0.25", 3)
    inventory.add("C-3", "Cherry jam", "4.99", 2)
    return inventory


def test_add_new_item(inv):
    item = inv.get("A-1")
    assert (item.name, item.unit_price, item.quantity) == ("Apple", Decimal("0.50"), 10)
    assert "A-1" in inv and "Z-9" not in inv
    assert len(inv) == 3


def test_add_existing_item_adds_quantity_and_updates_price(inv):
    item = inv.add("A-1", "Apple", "0.55", 5)
    assert item.quantity == 15
    assert item.unit_price == Decimal("0.55")
    assert len(inv) == 3


def test_add_rejects_bad_input(inv):
    with pytest.raises(InventoryError):
        inv.add("", "Nothing", 1)
    with pytest.raises(InventoryError):
        inv.add("D-4", "Dates", 1, -1)
    with pytest.raises(InventoryError):
        inv.add("D-4", "Dates", -1)
    with pytest.raises(InventoryError, match="already used"):
        inv.add("A-1", "Apricot", 1)


def test_remove(inv):
    assert inv.remove("A-1", 4).quantity == 6
    inv.remove("B-2", 3)
    assert inv.get("B-2").quantity == 0
    assert "B-2" in inv


def test_remove_too_many(inv):
    with pytest.raises(OutOfStock):
        inv.remove("C-3", 3)
    assert inv.get("C-3").quantity == 2


def test_unknown_item(inv):
    with pytest.raises(UnknownItem):
        inv.get("Z-9")
    with pytest.raises(UnknownItem):
        inv.remove("Z-9")


def test_iteration_is_sorted_by_sku():
    inventory = Inventory()
    for sku in ["b", "c", "a"]:
        inventory.add(sku, sku.upper(), 1)
    assert [item.sku for item in inventory] == ["a", "b", "c"]


def test_totals(inv):
    assert inv.total_quantity() == 15
    assert inv.total_value() == Decimal("5.00") + Decimal("0.75") + Decimal("9.98")
    assert inv.get("C-3").value == Decimal("9.98")


def test_totals_of_empty_inventory():
    assert Inventory().total_value() == Decimal("0.00")
    assert Inventory().total_quantity() == 0


def test_low_stock(inv):
    assert [item.sku for item in inv.low_stock()] == ["B-2", "C-3"]
    assert [item.sku for item in inv.low_stock(threshold=2)] == ["C-3"]


def test_search(inv):
    assert [item.sku for item in inv.search("JAM")] == ["C-3"]
    assert [item.sku for item in inv.search("an")] == ["B-2"]
    assert inv.search("kiwi") == []


def test_movements(inv):
    inv.remove("A-1", 2, reason="damaged")
    inv.add("A-1", "Apple", "0.50", 0)
    assert inv.history("A-1") == [Movement("A-1", 10, "received"), Movement("A-1", -2, "damaged")]
    assert len(inv.movements) == 4
