"""The invariant manifold: the model frame (``frame``), the selections (``selections``), the basis
(``basis``), weights <-> coordinates (``project``), confinement of the population gradient
(``confinement``) and sub-manifolds such as (alpha, beta, gamma, delta) (``submanifold``)."""
from mechjax.analysis.imir.manifold.basis import Basis, make_basis
from mechjax.analysis.imir.manifold.confinement import exact_confinement
from mechjax.analysis.imir.manifold.frame import Frame, TokenStructure, make_frame
from mechjax.analysis.imir.manifold.project import coords, gram, weights
from mechjax.analysis.imir.manifold.submanifold import (abgd_coordinates, abgd_projector,
                                                        sub_projector)

__all__ = ["Basis", "Frame", "TokenStructure", "abgd_coordinates", "abgd_projector", "coords",
           "exact_confinement", "gram", "make_basis", "make_frame", "sub_projector", "weights"]
