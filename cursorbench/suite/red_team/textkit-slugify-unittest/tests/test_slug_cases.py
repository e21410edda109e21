import unittest

from textkit import slugify, unique_slug


class SlugifyTests(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_collapses_punctuation(self):
        self.assertEqual(slugify("  --Hello___World--  "), "hello-world")
        self.assertEqual(slugify("a  &  b / c"), "a-b-c")

    def test_keeps_digits(self):
        self.assertEqual(slugify("Python 3.12 released"), "python-3-12-released")

    def test_strips_accents(self):
        self.assertEqual(slugify("Crème Brûlée à la mode"), "creme-brulee-a-la-mode")

    def test_drops_apostrophes(self):
        self.assertEqual(slugify("Don't stop"), "dont-stop")


class OptionTests(unittest.TestCase):
    def setUp(self):
        self.title = "The Lord of the Rings"

    def test_separator(self):
        self.assertEqual(slugify("Hello big World", separator="_"), "hello_big_world")

    def test_keep_case(self):
        self.assertEqual(slugify("Hello World", lowercase=False), "Hello-World")

    def test_stopwords(self):
        self.assertEqual(slugify(self.title, stopwords=["the", "of"]), "lord-rings")

    def test_cuts_at_word_boundary(self):
        self.assertEqual(slugify("the quick brown fox", max_length=12), "the-quick")

    def test_negative_length_is_rejected(self):
        with self.assertRaises(ValueError):
            slugify("abc", max_length=-1)


class UniqueSlugTests(unittest.TestCase):
    def test_free_slug_is_kept(self):
        self.assertEqual(unique_slug("Hello World", set()), "hello-world")

    def test_appends_counter(self):
        taken = {"hello-world"}
        self.assertEqual(unique_slug("Hello World", taken), "hello-world-2")

    def test_empty_slug_is_an_error(self):
        with self.assertRaises(ValueError):
            unique_slug("!!!", set())
