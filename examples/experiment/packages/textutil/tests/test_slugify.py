from textutil import slugify


def test_joins_words():
    assert slugify("a b") == "a-b"


def test_strips_spaces():
    assert slugify("  a ") == "a"
