import pytest

from minicalc import Token, TokenizeError, tokenize


def kinds(source):
    return [(t.kind, t.value) for t in tokenize(source)]


def test_empty_source_is_just_eof():
    assert tokenize("") == [Token("EOF", "", 0)]


def test_numbers():
    assert [t.value for t in tokenize("1 2.5 .5 3. 1e3 2.5E-2")][:-1] == [
        "1",
        "2.5",
        ".5",
        "3.",
        "1e3",
        "2.5E-2",
    ]


def test_names_operators_and_punctuation():
    assert kinds("max(x_1, 2)^y") == [
        ("NAME", "max"),
        ("LPAREN", "("),
        ("NAME", "x_1"),
        ("COMMA", ","),
        ("NUMBER", "2"),
        ("RPAREN", ")"),
        ("OP", "^"),
        ("NAME", "y"),
        ("EOF", ""),
    ]


def test_positions():
    tokens = tokenize("a =  12")
    assert [t.pos for t in tokens] == [0, 2, 5, 7]


def test_whitespace_is_optional():
    assert kinds("1+2") == kinds(" 1 +\t2 ")[:3] + [("EOF", "")]


def test_unexpected_character():
    with pytest.raises(TokenizeError) as info:
        tokenize("1 + $")
    assert info.value.pos == 4


def test_number_followed_by_letter():
    with pytest.raises(TokenizeError, match="malformed number"):
        tokenize("2x")


def test_is_op():
    plus = tokenize("+")[0]
    assert plus.is_op("+", "-")
    assert not plus.is_op("*")
