"""Quickstart: modular addition grokking across seeds, trained as one compiled sweep."""
