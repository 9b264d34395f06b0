"""Interval merging."""


def merge(intervals):
    """Merge overlapping closed intervals given as (start, end) pairs.

    The result is sorted by start and no two intervals in it overlap.
    """
    ordered = sorted((min(a, b), max(a, b)) for a, b in intervals)
    merged = []
    for start, end in ordered:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total_length(intervals):
    """Total length covered by the intervals, counting overlaps once."""
    return sum(end - start for start, end in merge(intervals))
