"""Theorems 2 and 3 and the emergence order on the exact model (``suppression``, ``burstiness``,
``emergence_order``) and on the closed-form 4-coordinate model (``four_coord``)."""
from mechjax.analysis.imir.theorems.burstiness import theorem3
from mechjax.analysis.imir.theorems.emergence_order import emergence
from mechjax.analysis.imir.theorems.gradient_suppression import (suppression,
                                                                 theorem2_protocol_point,
                                                                 theorem2_trajectories)

__all__ = ["emergence", "suppression", "theorem2_protocol_point", "theorem2_trajectories",
           "theorem3"]
