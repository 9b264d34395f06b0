import pytest

from sizes import natural


# Ids with spaces: SWE-bench's parser cuts them at the first space.
@pytest.mark.parametrize(("n", "words"), [(1, "1 Byte"), (2, "2 Bytes"), (3, "3 Bytes")])
def test_natural(n, words):
    assert natural(n) == words


# A message-like id, and one that fails.
@pytest.mark.parametrize("text", ["x - y", "a b c"])
def test_text(text):
    assert " " in text and "-" not in text


# Ids that only differ after a space land on one cut id; they disagree.
@pytest.mark.parametrize("case", ["same 1", "same 2"])
def test_cut(case):
    assert case.endswith("1")
