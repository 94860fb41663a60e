"""IMIR: routes."""
