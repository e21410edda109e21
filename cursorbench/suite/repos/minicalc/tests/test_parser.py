import pytest

from minicalc import Assign, BinOp, Call, Num, ParseError, UnaryOp, Var, parse


def test_number():
    assert parse("42") == Num(42.0)


def test_precedence():
    assert parse("1 + 2 * 3") == BinOp("+", Num(1), BinOp("*", Num(2), Num(3)))


def test_parentheses():
    assert parse("(1 + 2) * 3") == BinOp("*", BinOp("+", Num(1), Num(2)), Num(3))


def test_multiplicative_chain_is_left_nested():
    assert parse("8 / 4 * 2") == BinOp("*", BinOp("/", Num(8), Num(4)), Num(2))


def test_power_is_right_associative():
    assert parse("2 ^ 3 ^ 2") == BinOp("^", Num(2), BinOp("^", Num(3), Num(2)))


def test_unary_minus_binds_looser_than_power():
    assert parse("-2 ^ 2") == UnaryOp("-", BinOp("^", Num(2), Num(2)))


def test_negative_exponent():
    assert parse("2 ^ -1") == BinOp("^", Num(2), UnaryOp("-", Num(1)))


def test_calls():
    assert parse("max(a, 1 + 2)") == Call("max", (Var("a"), BinOp("+", Num(1), Num(2))))
    assert parse("f()") == Call("f", ())


def test_assignment():
    assert parse("x = y * 2") == Assign("x", BinOp("*", Var("y"), Num(2)))


class TestErrors:
    def test_trailing_operator(self):
        with pytest.raises(ParseError, match="end of input"):
            parse("1 +")

    def test_unclosed_paren(self):
        with pytest.raises(ParseError, match=r"expected '\)'"):
            parse("(1 + 2")

    def test_extra_tokens(self):
        with pytest.raises(ParseError) as info:
            parse("1 2")
        assert info.value.pos == 2

    def test_assignment_target_must_be_a_name(self):
        with pytest.raises(ParseError):
            parse("2 = 3")

    def test_empty(self):
        with pytest.raises(ParseError):
            parse("")
