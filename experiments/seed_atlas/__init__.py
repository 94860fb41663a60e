"""Seed atlas: how the seeds of a saved run differ (groups, separating measures, from when)."""
