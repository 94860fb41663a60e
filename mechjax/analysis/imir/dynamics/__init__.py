"""IMIR: dynamics."""
