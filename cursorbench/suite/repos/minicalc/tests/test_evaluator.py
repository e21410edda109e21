import math

import pytest

from minicalc import CalcError, Calculator, EvalError


@pytest.fixture
def calc():
    return Calculator()


def test_arithmetic(calc):
    assert calc.evaluate("1 + 2 * 3") == 7.0
    assert calc.evaluate("(1 + 2) * 3") == 9.0
    assert calc.evaluate("7 % 4") == 3.0
    assert calc.evaluate("9 / 2") == 4.5


def test_power_and_unary(calc):
    assert calc.evaluate("2 ^ 3 ^ 2") == 512.0
    assert calc.evaluate("-2 ^ 2") == -4.0
    assert calc.evaluate("(-2) ^ 2") == 4.0
    assert calc.evaluate("2 ^ -1") == 0.5
    assert calc.evaluate("--3") == 3.0


def test_variables_persist(calc):
    assert calc.evaluate("r = 2") == 2.0
    assert calc.evaluate("r ^ 2 * 3") == 12.0
    assert calc.variables == {"r": 2.0}


def test_initial_variables():
    assert Calculator(variables={"x": 4}).evaluate("x * x") == 16.0


def test_constants(calc):
    assert calc.evaluate("pi") == math.pi
    assert calc.evaluate("e ^ 1") == math.e


def test_builtin_functions(calc):
    assert calc.evaluate("sqrt(16) + abs(-2)") == 6.0
    assert calc.evaluate("max(1, 5, 3)") == 5.0
    assert calc.evaluate("round(2.6)") == 3.0


def test_custom_functions():
    calc = Calculator(functions={"double": lambda x: 2 * x})
    assert calc.evaluate("double(21)") == 42.0


class TestErrors:
    def test_unknown_variable(self, calc):
        with pytest.raises(EvalError, match="unknown variable 'nope'"):
            calc.evaluate("nope + 1")

    def test_unknown_function(self, calc):
        with pytest.raises(EvalError, match="unknown function"):
            calc.evaluate("nope(1)")

    def test_division_by_zero(self, calc):
        with pytest.raises(EvalError, match="division by zero"):
            calc.evaluate("1 / (2 * 0)")

    def test_modulo_by_zero(self, calc):
        with pytest.raises(EvalError):
            calc.evaluate("1 % 0")

    def test_wrong_argument_count(self, calc):
        with pytest.raises(EvalError, match="bad call to sqrt"):
            calc.evaluate("sqrt(1, 2)")

    def test_math_domain_error(self, calc):
        with pytest.raises(EvalError):
            calc.evaluate("sqrt(-1)")

    def test_complex_power(self, calc):
        with pytest.raises(EvalError, match="not a real number"):
            calc.evaluate("(-8) ^ 0.5")

    def test_cannot_assign_constant(self, calc):
        with pytest.raises(EvalError):
            calc.evaluate("pi = 3")

    def test_cannot_assign_function_name(self, calc):
        with pytest.raises(EvalError):
            calc.evaluate("sqrt = 3")

    def test_all_errors_are_calc_errors(self, calc):
        for source in ["1 +", "$", "x", "1 / 0"]:
            with pytest.raises(CalcError):
                calc.evaluate(source)
