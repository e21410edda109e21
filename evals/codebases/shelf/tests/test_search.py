from shelf.search import find_items, top_sellers


def test_find_items():
    assert find_items(["Apple", "pineapple", "Pear"], "apple") == ["Apple", "pineapple"]


def test_top_sellers():
    assert top_sellers({"a": 3, "b": 5, "c": 3}, 2) == ["b", "a"]
