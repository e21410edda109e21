from decimal import Decimal

import pytest

from ledger import FixedDiscount, Inventory, Order, PercentageDiscount


@pytest.fixture
def order():
    inventory = Inventory()
    inventory.add("PEN", "Pen", "1.99", 100)
    inventory.add("PAD", "Notepad", "4.50", 100)
    order = Order(inventory)
    order.add("PEN", 10)
    order.add("PAD", 2)
    return order


def test_percentage_off_everything(order):
    order.apply(PercentageDiscount(10))
    assert order.subtotal() == Decimal("28.90")
    assert order.discount_total() == Decimal("2.89")
    assert order.total() == Decimal("26.01")


def test_percentage_rounds_to_cents(order):
    assert PercentageDiscount("12.5").amount(order) == Decimal("3.61")


def test_percentage_limited_to_skus(order):
    assert PercentageDiscount(50, skus=["PAD"]).amount(order) == Decimal("4.50")


def test_percentage_must_be_in_range():
    for bad in (0, -5, 101):
        with pytest.raises(ValueError):
            PercentageDiscount(bad)


def test_fixed_discount(order):
    assert FixedDiscount(5).amount(order) == Decimal("5.00")


def test_fixed_discount_minimum_subtotal(order):
    assert FixedDiscount(5, min_subtotal=30).amount(order) == Decimal("0.00")
    assert FixedDiscount(5, min_subtotal="28.90").amount(order) == Decimal("5.00")


def test_fixed_discount_must_be_positive():
    with pytest.raises(ValueError):
        FixedDiscount(0)


def test_discounts_stack(order):
    order.apply(PercentageDiscount(10))
    order.apply(FixedDiscount(2))
    assert order.total() == Decimal("24.01")


def test_discounts_never_exceed_subtotal(order):
    order.apply(FixedDiscount(20))
    order.apply(FixedDiscount(20))
    assert order.discount_total() == order.subtotal()
    assert order.total() == Decimal("0.00")


def test_checkout_charges_discounted_total(order):
    order.apply(FixedDiscount("0.90"))
    assert order.checkout() == Decimal("28.00")
