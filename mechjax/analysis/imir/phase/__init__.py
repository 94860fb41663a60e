"""Phase diagrams: the read-offs every model shares (``readoffs``), the exact model's diagrams as
data (``diagrams``: ``fr_fv_diagram`` and ``b_fr_diagram`` return a ``PhaseDiagram``), its checks
against the enumerated field and SGD (``checks``), the clock-free comparisons with trained models
(``clockfree``) and the 4-coordinate comparison (``four_coord``, the same ``PhaseDiagram``)."""
from mechjax.analysis.imir.phase.checks import vs_full_ode, vs_sgd
from mechjax.analysis.imir.phase.diagrams import (PhaseDiagram, b_fr_diagram, b_grid, boundary,
                                                  fr_fv_diagram)
from mechjax.analysis.imir.phase.readoffs import (WINNERS, contour_agreement, readoff, s_factor,
                                                  winner_counts)

__all__ = ["PhaseDiagram", "WINNERS", "b_fr_diagram", "b_grid", "boundary", "contour_agreement",
           "fr_fv_diagram", "readoff", "s_factor", "vs_full_ode", "vs_sgd", "winner_counts"]
