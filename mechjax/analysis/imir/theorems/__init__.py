"""IMIR: theorems."""
