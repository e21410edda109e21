from shelf import apply_discount, format_price, price_with_tax


def test_tax():
    assert price_with_tax(1000) == 1200


def test_discount():
    assert apply_discount(1000, 25) == 750


def test_format():
    assert format_price(1205) == "$12.05"
