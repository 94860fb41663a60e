"""IMIR: forward."""
