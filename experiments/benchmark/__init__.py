"""Throughput benchmark: model-steps/s of mechjax against a sequential loop and TransformerLens."""
