import pytest

from textkit import convert_case, to_camel, to_constant, to_kebab, to_pascal


def test_to_kebab():
    assert to_kebab("parseHTTPResponse") == "parse-http-response"
    assert to_kebab("CONSTANT_NAME") == "constant-name"


def test_to_constant():
    assert to_constant("parseHTTPResponse") == "PARSE_HTTP_RESPONSE"
    assert to_constant("max retries") == "MAX_RETRIES"


def test_to_pascal():
    assert to_pascal("parse_http_response") == "ParseHttpResponse"
    assert to_pascal("hello world") == "HelloWorld"


def test_to_pascal_keep_acronyms():
    assert to_pascal("parse HTTP response", keep_acronyms=True) == "ParseHTTPResponse"
    assert to_pascal("parse HTTP response") == "ParseHttpResponse"


def test_to_camel():
    assert to_camel("parse_http_response") == "parseHttpResponse"
    assert to_camel("Hello World") == "helloWorld"


def test_to_camel_first_word_is_lowercase():
    assert to_camel("HTTP server", keep_acronyms=True) == "httpServer"
    assert to_camel("get HTTP status", keep_acronyms=True) == "getHTTPStatus"


def test_empty_input():
    assert to_camel("") == ""
    assert to_pascal("") == ""
    assert to_kebab("--") == ""


def test_round_trip():
    assert to_camel(to_kebab("someLongName2")) == "someLongName2"


class TestConvertCase:
    def test_each_style(self):
        text = "userAccountID"
        assert convert_case(text, "snake") == "user_account_id"
        assert convert_case(text, "kebab") == "user-account-id"
        assert convert_case(text, "constant") == "USER_ACCOUNT_ID"
        assert convert_case(text, "pascal") == "UserAccountId"
        assert convert_case(text, "camel") == "userAccountId"

    def test_style_name_is_case_insensitive(self):
        assert convert_case("a b", "KEBAB") == "a-b"

    def test_unknown_style(self):
        with pytest.raises(ValueError, match="unknown case style"):
            convert_case("a b", "sponge")
