"""The behaviours the bug report names (a debugging task's hidden tests, beside the
package's own URL tests)."""

import pytest

from boltons.urlutils import URL, parse_qsl


@pytest.mark.parametrize(
    "text",
    ["https://example.com/", "http://example.com/a?b=c", "ftp://files.example.com/pub/"],
)
def test_default_ports_are_left_out(text):
    assert URL(text).to_text() == text
    assert ":443" not in URL(text).get_authority()


def test_an_explicit_default_port_is_normalised_away():
    url = URL("https://example.com:443/docs")
    assert url.port == 443
    assert url.to_text() == "https://example.com/docs"


def test_other_ports_are_kept():
    assert URL("https://example.com:8443/x").to_text() == "https://example.com:8443/x"
    assert URL("http://example.com:443/").to_text() == "http://example.com:443/"


def test_plus_in_query_values_decodes_to_a_space():
    url = URL("https://example.com/search?q=hello+world&tag=a+b+c")
    assert url.query_params["q"] == "hello world"
    assert url.query_params.getlist("tag") == ["a b c"]


def test_plus_in_query_keys_and_escaped_plus():
    assert parse_qsl("full+name=Ada+Lovelace&sum=1%2B1") == [
        ("full name", "Ada Lovelace"),
        ("sum", "1+1"),
    ]


@pytest.mark.parametrize(
    ("base", "link", "expected"),
    [
        ("https://example.com/docs/guide/intro.html", "../img/a.png",
         "https://example.com/docs/img/a.png"),
        ("https://example.com/a/b/c/", "../../d", "https://example.com/a/d"),
        ("https://example.com/a/b", "./c/../../e", "https://example.com/e"),
        ("https://example.com/a/", "../../../top", "https://example.com/top"),
    ],
)
def test_dot_dot_segments_climb_up(base, link, expected):
    assert URL(base).navigate(link).to_text() == expected
