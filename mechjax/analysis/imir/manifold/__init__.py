"""IMIR: manifold."""
