"""Merge closed integer intervals."""

from intervals.merge import merge, total_length

__all__ = ["merge", "total_length"]
