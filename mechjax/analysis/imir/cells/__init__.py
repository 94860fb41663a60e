"""IMIR: cells."""
