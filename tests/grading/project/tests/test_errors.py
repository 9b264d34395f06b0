import pytest


@pytest.fixture
def broken():
    raise RuntimeError("setup fails")


@pytest.fixture
def leaky():
    yield
    raise RuntimeError("teardown fails")


def test_setup_error(broken):
    pass


def test_teardown_error(leaky):
    pass


def test_fails_then_teardown_error(leaky):
    assert 1 == 2
