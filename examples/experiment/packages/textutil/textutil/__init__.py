"""Text helpers."""


def slugify(text):
    """A URL slug: the words of `text`, lowercase, joined by dashes."""
    words = text.strip().split()
    return "-".join(words)
