import pytest

from minicalc import Assign, BinOp, Call, Num, UnaryOp, Var, format_expression, parse, to_source

a, b, c = Var("a"), Var("b"), Var("c")


def test_atoms():
    assert to_source(Var("x")) == "x"
    assert to_source(Num(3.0)) == "3"
    assert to_source(Num(2.5)) == "2.5"


def test_large_and_tiny_numbers_round_trip():
    for value in (1e20, 1.5e-7, 123456789.25):
        assert parse(to_source(Num(value))) == Num(value)


def test_non_finite_numbers_are_rejected():
    with pytest.raises(ValueError):
        to_source(Num(float("inf")))


def test_spacing():
    assert to_source(BinOp("*", a, Num(2))) == "a * 2"
    assert to_source(UnaryOp("-", a)) == "-a"
    assert to_source(Call("max", (a, Num(1)))) == "max(a, 1)"
    assert to_source(Call("f", ())) == "f()"
    assert to_source(Assign("x", BinOp("^", a, b))) == "x = a ^ b"


def test_no_parentheses_when_precedence_suffices():
    assert to_source(BinOp("+", a, BinOp("*", b, c))) == "a + b * c"
    assert to_source(BinOp("+", BinOp("*", a, b), c)) == "a * b + c"


def test_parentheses_for_looser_operand():
    assert to_source(BinOp("*", BinOp("+", a, b), c)) == "(a + b) * c"
    assert to_source(BinOp("/", a, BinOp("-", b, c))) == "a / (b - c)"


def test_left_associative_operators():
    assert to_source(BinOp("-", BinOp("-", a, b), c)) == "a - b - c"
    assert to_source(BinOp("-", a, BinOp("-", b, c))) == "a - (b - c)"
    assert to_source(BinOp("/", a, BinOp("*", b, c))) == "a / (b * c)"
    assert to_source(BinOp("+", a, BinOp("+", b, c))) == "a + (b + c)"


def test_power_is_right_associative():
    assert to_source(BinOp("^", a, BinOp("^", b, c))) == "a ^ b ^ c"
    assert to_source(BinOp("^", BinOp("^", a, b), c)) == "(a ^ b) ^ c"


def test_unary_operands():
    assert to_source(UnaryOp("-", BinOp("^", Num(2), Num(2)))) == "-2 ^ 2"
    assert to_source(BinOp("^", UnaryOp("-", Num(2)), Num(2))) == "(-2) ^ 2"
    assert to_source(BinOp("^", Num(2), UnaryOp("-", Num(1)))) == "2 ^ -1"
    assert to_source(UnaryOp("-", BinOp("+", a, b))) == "-(a + b)"
    assert to_source(BinOp("*", a, UnaryOp("-", b))) == "a * -b"


def test_negative_number_literal_as_base():
    assert to_source(BinOp("^", Num(-2.0), Num(2))) == "(-2) ^ 2"


def test_call_arguments_need_no_parentheses():
    assert to_source(Call("max", (BinOp("+", a, b), Num(1)))) == "max(a + b, 1)"


def test_format_expression_normalises():
    assert format_expression("((1+2))*3") == "(1 + 2) * 3"
    assert format_expression("x=2^(3^2)") == "x = 2 ^ 3 ^ 2"
    assert format_expression("(-(a))*(b)") == "-a * b"


def test_round_trip():
    trees = [
        BinOp("-", BinOp("*", a, b), BinOp("-", c, Num(2))),
        BinOp("^", BinOp("^", a, UnaryOp("-", b)), c),
        UnaryOp("-", Call("sqrt", (BinOp("%", a, BinOp("/", b, c)),))),
        Assign("y", BinOp("*", BinOp("+", a, Num(0.5)), UnaryOp("+", c))),
    ]
    for tree in trees:
        assert parse(to_source(tree)) == tree
