from intervals import merge, total_length


def test_disjoint_intervals_stay_apart():
    assert merge([(5, 6), (1, 2)]) == [(1, 2), (5, 6)]


def test_nested_interval_is_absorbed():
    assert merge([(1, 10), (2, 3)]) == [(1, 10)]


def test_total_length_counts_overlap_once():
    assert total_length([(0, 4), (2, 6)]) == 6
