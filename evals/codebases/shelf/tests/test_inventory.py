import pytest

from shelf import Inventory, InventoryError


def test_add_and_count():
    stock = Inventory()
    stock.add("apple", 3)
    stock.add("apple", 2)
    assert stock.count("apple") == 5


def test_remove_too_many():
    stock = Inventory()
    stock.add("pear", 1)
    with pytest.raises(InventoryError):
        stock.remove("pear", 2)


def test_skus_skip_empty():
    stock = Inventory()
    stock.add("fig", 1)
    stock.remove("fig", 1)
    assert stock.skus() == []
