from decimal import Decimal

import pytest

from ledger import to_money


def test_two_decimal_places():
    assert str(to_money(3)) == "3.00"
    assert str(to_money("2.5")) == "2.50"


def test_floats_use_their_shortest_repr():
    assert to_money(0.1) == Decimal("0.10")
    assert to_money(2.675) == Decimal("2.68")


def test_rounds_half_up():
    assert to_money("0.125") == Decimal("0.13")
    assert to_money("0.124") == Decimal("0.12")
    assert to_money("-0.125") == Decimal("-0.13")


@pytest.mark.parametrize("bad", ["abc", "", "NaN", "inf", None], ids=["word", "empty", "nan", "inf", "none"])
def test_rejects_non_numbers(bad):
    with pytest.raises(ValueError):
        to_money(bad)
