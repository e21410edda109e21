from decimal import Decimal

import pytest

from ledger import BestOf, BulkDiscount, BuyXGetYFree, FixedDiscount, Inventory, Order, PercentageDiscount


@pytest.fixture
def inventory():
    inventory = Inventory()
    inventory.add("SOAP", "Soap bar", "2.40", 100)
    inventory.add("TOWEL", "Towel", "12.00", 100)
    return inventory


def make_order(inventory, **quantities):
    order = Order(inventory)
    for sku, quantity in quantities.items():
        order.add(sku, quantity)
    return order


class TestBulkDiscount:
    def test_below_minimum_quantity(self, inventory):
        order = make_order(inventory, SOAP=9)
        assert BulkDiscount("SOAP", 10, 15).amount(order) == Decimal("0.00")

    def test_at_minimum_quantity(self, inventory):
        order = make_order(inventory, SOAP=10)
        assert BulkDiscount("SOAP", 10, 15).amount(order) == Decimal("3.60")

    def test_only_its_own_sku(self, inventory):
        order = make_order(inventory, SOAP=2, TOWEL=10)
        assert BulkDiscount("SOAP", 2, 50).amount(order) == Decimal("2.40")

    def test_rounds_to_cents(self, inventory):
        order = make_order(inventory, SOAP=3)
        assert BulkDiscount("SOAP", 3, "12.5").amount(order) == Decimal("0.90")

    def test_applied_to_order(self, inventory):
        order = make_order(inventory, SOAP=10, TOWEL=1)
        order.apply(BulkDiscount("SOAP", 10, 15))
        assert order.total() == Decimal("32.40")

    def test_validation(self):
        with pytest.raises(ValueError):
            BulkDiscount("SOAP", 0, 10)
        with pytest.raises(ValueError):
            BulkDiscount("SOAP", 5, 0)
        with pytest.raises(ValueError):
            BulkDiscount("SOAP", 5, 150)


class TestBuyXGetYFree:
    def test_not_enough_for_a_free_unit(self, inventory):
        order = make_order(inventory, SOAP=2)
        assert BuyXGetYFree("SOAP", buy=2, free=1).amount(order) == Decimal("0.00")

    def test_one_complete_group(self, inventory):
        order = make_order(inventory, SOAP=3)
        assert BuyXGetYFree("SOAP", buy=2, free=1).amount(order) == Decimal("2.40")

    def test_incomplete_last_group_is_paid(self, inventory):
        order = make_order(inventory, SOAP=7)
        assert BuyXGetYFree("SOAP", buy=2, free=1).amount(order) == Decimal("4.80")

    def test_several_free_units_per_group(self, inventory):
        order = make_order(inventory, TOWEL=10)
        assert BuyXGetYFree("TOWEL", buy=3, free=2).amount(order) == Decimal("48.00")

    def test_free_defaults_to_one(self, inventory):
        order = make_order(inventory, TOWEL=2)
        assert BuyXGetYFree("TOWEL", buy=1).amount(order) == Decimal("12.00")

    def test_other_skus_unaffected(self, inventory):
        order = make_order(inventory, TOWEL=5)
        assert BuyXGetYFree("SOAP", buy=1).amount(order) == Decimal("0.00")

    def test_validation(self):
        with pytest.raises(ValueError):
            BuyXGetYFree("SOAP", buy=0)
        with pytest.raises(ValueError):
            BuyXGetYFree("SOAP", buy=2, free=0)


class TestBestOf:
    def test_picks_the_largest(self, inventory):
        order = make_order(inventory, SOAP=10, TOWEL=1)
        best = BestOf(PercentageDiscount(5), BuyXGetYFree("SOAP", buy=4), FixedDiscount(3))
        assert best.amount(order) == Decimal("4.80")

    def test_does_not_stack(self, inventory):
        order = make_order(inventory, SOAP=10)
        order.apply(BestOf(BulkDiscount("SOAP", 10, 10), FixedDiscount(2)))
        assert order.total() == Decimal("21.60")

    def test_needs_a_discount(self):
        with pytest.raises(ValueError):
            BestOf()
