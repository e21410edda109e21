from minicalc import BinOp, Calculator, Num, Var, parse


def test_chained_subtraction():
    assert Calculator().evaluate("10 - 3 - 2") == 5.0


def test_subtraction_then_addition():
    assert Calculator().evaluate("8 - 2 + 1") == 7.0


def test_long_chain():
    assert Calculator().evaluate("100 - 1 - 2 - 3 - 4") == 90.0


def test_chain_with_variables():
    calc = Calculator(variables={"x": 10})
    assert calc.evaluate("x - 4 + x - 1") == 15.0


def test_chain_inside_call_arguments():
    assert Calculator().evaluate("max(10 - 5 - 5, 2 * 3 - 1 - 1)") == 4.0


def test_assignment_of_chain():
    calc = Calculator()
    calc.evaluate("total = 50 - 20 - 5")
    assert calc.variables["total"] == 25.0


def test_subtraction_tree_is_left_nested():
    a, b, c = Var("a"), Var("b"), Var("c")
    assert parse("a - b - c") == BinOp("-", BinOp("-", a, b), c)


def test_addition_tree_is_left_nested():
    assert parse("1 + 2 + 3") == BinOp("+", BinOp("+", Num(1), Num(2)), Num(3))
