import pytest

from textkit import split_words, to_snake


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("hello world", ["hello", "world"]),
        ("helloWorld", ["hello", "World"]),
        ("HelloWorld", ["Hello", "World"]),
        ("HTTPServerError", ["HTTP", "Server", "Error"]),
        ("version2_final", ["version", "2", "final"]),
        ("  --kebab-case--  ", ["kebab", "case"]),
        ("CONSTANT_NAME", ["CONSTANT", "NAME"]),
    ],
    ids=["spaces", "camel", "pascal", "acronym", "digits", "kebab", "constant"],
)
def test_split_words(text, words):
    assert split_words(text) == words


def test_split_words_empty():
    assert split_words("") == []
    assert split_words("__") == []


def test_to_snake():
    assert to_snake("parseHTTPResponse") == "parse_http_response"
    assert to_snake("Parse HTTP response") == "parse_http_response"
    assert to_snake("already_snake_case") == "already_snake_case"


def test_to_snake_keeps_digits_apart():
    assert to_snake("utf8Encode") == "utf_8_encode"
