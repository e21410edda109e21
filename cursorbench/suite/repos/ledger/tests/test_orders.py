from decimal import Decimal

import pytest

from ledger import Inventory, Order, OrderError, OrderLine, OutOfStock


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add("MUG", "Mug", "8.00", 5)
    inventory.add("TEE", "T-shirt", "15.50", 2)
    return inventory


def test_add_lines(inv):
    order = Order(inv)
    order.add("MUG", 2)
    order.add("TEE")
    order.add("MUG")
    assert order.lines == [
        OrderLine("MUG", "Mug", 3, Decimal("8.00")),
        OrderLine("TEE", "T-shirt", 1, Decimal("15.50")),
    ]
    assert order.quantity_of("MUG") == 3
    assert order.quantity_of("CAP") == 0


def test_subtotal_and_total_without_discounts(inv):
    order = Order(inv)
    order.add("MUG", 2)
    order.add("TEE", 2)
    assert order.subtotal() == Decimal("47.00")
    assert order.discount_total() == Decimal("0.00")
    assert order.total() == Decimal("47.00")


def test_cannot_order_more_than_in_stock(inv):
    order = Order(inv)
    order.add("TEE", 2)
    with pytest.raises(OutOfStock):
        order.add("TEE")


def test_quantity_must_be_positive(inv):
    with pytest.raises(OrderError):
        Order(inv).add("MUG", 0)


def test_remove_line(inv):
    order = Order(inv)
    order.add("MUG")
    order.remove("MUG")
    order.remove("TEE")
    assert order.lines == []


def test_price_is_fixed_when_added(inv):
    order = Order(inv)
    order.add("MUG")
    inv.add("MUG", "Mug", "9.00", 0)
    assert order.subtotal() == Decimal("8.00")


def test_checkout_takes_stock(inv):
    order = Order(inv)
    order.add("MUG", 2)
    assert order.checkout() == Decimal("16.00")
    assert inv.get("MUG").quantity == 3
    assert inv.history("MUG")[-1].reason == "sold"


def test_checkout_is_all_or_nothing(inv):
    order = Order(inv)
    order.add("MUG", 1)
    order.add("TEE", 2)
    inv.remove("TEE", 1)
    with pytest.raises(OutOfStock):
        order.checkout()
    assert inv.get("MUG").quantity == 5
    assert not order.checked_out


def test_checked_out_order_is_closed(inv):
    order = Order(inv)
    order.add("MUG")
    order.checkout()
    with pytest.raises(OrderError):
        order.add("MUG")
    with pytest.raises(OrderError):
        order.checkout()


def test_empty_order_cannot_be_checked_out(inv):
    with pytest.raises(OrderError):
        Order(inv).checkout()
