"""IMIR: detection."""
