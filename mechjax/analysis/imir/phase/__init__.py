"""IMIR: phase."""
