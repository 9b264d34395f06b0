import pytest


def test_plain():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="fixed meanwhile")
def test_xpass():
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


def test_skip():
    pytest.skip("not here")


@pytest.mark.skipif(True, reason="never")
def test_skipif():
    pass
