import pytest

from textkit import slugify, unique_slug


def test_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_collapses_punctuation_and_whitespace():
    assert slugify("  --Hello___World--  ") == "hello-world"
    assert slugify("a  &  b / c") == "a-b-c"


def test_keeps_digits():
    assert slugify("Python 3.12 released") == "python-3-12-released"


def test_strips_accents():
    assert slugify("Crème Brûlée à la mode") == "creme-brulee-a-la-mode"


def test_transliterates_special_letters():
    assert slugify("Straße in Øresund") == "strasse-in-oresund"
    assert slugify("Łódź Æsir") == "lodz-aesir"


def test_drops_apostrophes():
    assert slugify("Don't stop") == "dont-stop"
    assert slugify("It\u2019s here") == "its-here"


def test_nothing_left():
    assert slugify("!!! ???") == ""
    assert slugify("") == ""


class TestOptions:
    def test_separator(self):
        assert slugify("Hello big World", separator="_") == "hello_big_world"

    def test_multi_character_separator(self):
        assert slugify("one two", separator="--") == "one--two"

    def test_keep_case(self):
        assert slugify("Hello World", lowercase=False) == "Hello-World"

    def test_stopwords(self):
        assert slugify("The Lord of the Rings", stopwords=["the", "of"]) == "lord-rings"

    def test_stopwords_are_case_insensitive(self):
        assert slugify("A Tale Of Two Cities", stopwords={"A", "OF"}) == "tale-two-cities"


class TestMaxLength:
    def test_short_enough_is_unchanged(self):
        assert slugify("the quick brown fox", max_length=50) == "the-quick-brown-fox"

    def test_cuts_at_word_boundary(self):
        assert slugify("the quick brown fox", max_length=12) == "the-quick"

    def test_exact_boundary(self):
        assert slugify("the quick brown fox", max_length=9) == "the-quick"

    def test_never_ends_with_separator(self):
        assert slugify("the quick brown fox", max_length=10) == "the-quick"

    def test_single_long_word_is_cut_hard(self):
        assert slugify("Supercalifragilistic", max_length=5) == "super"

    def test_negative_is_rejected(self):
        with pytest.raises(ValueError):
            slugify("abc", max_length=-1)


class TestUniqueSlug:
    def test_free_slug_is_kept(self):
        assert unique_slug("Hello World", set()) == "hello-world"

    def test_appends_counter(self):
        assert unique_slug("Hello World", {"hello-world"}) == "hello-world-2"

    def test_skips_taken_counters(self):
        taken = ["hello-world", "hello-world-2", "hello-world-3"]
        assert unique_slug("Hello World", taken) == "hello-world-4"

    def test_uses_separator(self):
        assert unique_slug("Hello World", {"hello_world"}, separator="_") == "hello_world_2"

    def test_passes_options_on(self):
        assert unique_slug("The Hobbit", {"hobbit"}, stopwords=["the"]) == "hobbit-2"

    def test_empty_slug_is_an_error(self):
        with pytest.raises(ValueError):
            unique_slug("???", set())
