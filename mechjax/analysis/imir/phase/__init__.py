"""Phase diagrams: the read-offs every model shares (``readoffs``), the exact model's diagrams
(``diagrams``), its checks against the enumerated field and SGD (``checks``), and the
4-coordinate comparison (``four_coord``)."""
from mechjax.analysis.imir.phase.checks import vs_full_ode, vs_sgd
from mechjax.analysis.imir.phase.diagrams import b_grid, boundary
from mechjax.analysis.imir.phase.readoffs import (WINNERS, contour_agreement, readoff, s_factor,
                                                  winner_counts)

__all__ = ["WINNERS", "b_grid", "boundary", "contour_agreement", "readoff", "s_factor",
           "vs_full_ode", "vs_sgd", "winner_counts"]
