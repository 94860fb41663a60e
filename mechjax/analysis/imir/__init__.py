"""IMIR (arXiv 2607.11875): the invariant manifold of attention-only transformers on block-list
tasks. ``basis`` builds the model frame and the manifold basis, ``project`` maps weights to and
from coordinates, ``confinement`` checks that the population gradient stays on the manifold,
``ode`` gives the exact reduced dynamics, ``solve`` integrates every IMIR flow (diffrax, adaptive),
``sgd`` is the plain-SGD loop they are compared with; ``reduced`` is the closed-form 4-coordinate
(alpha, beta, gamma, delta) model behind the phase diagrams, ``phase`` solves their grids and reads
them off, ``theorems`` checks Theorems 2 and 3, ``full_phase`` the full-manifold diagram on a tiny
spec, ``cells`` trains full transformers on grid cells and ``compare`` sets them against the ODE,
``standard_cells`` trains the standard architecture (Q/K/V/O, random init) on grid cells;
``measure`` prints the numbers of docs/imir.md. Derivations: docs/imir.md."""
from mechjax.analysis.imir.basis import (Basis, Frame, TokenStructure, dense_basis, fixed_params,
                                         imir_config, make_basis, make_frame,
                                         position_selections, token_selections,
                                         trainable_names, zero_trainables)
from mechjax.analysis.imir.confinement import (exact_confinement, grad_residual, mc_confinement,
                                               population_batch, population_gradient)
from mechjax.analysis.imir.loss import readout_accuracy, readout_loss
from mechjax.analysis.imir.ode import (abgd_coordinates, gradient_descent, integrate,
                                       max_rel_deviation, population_loss_fn,
                                       vector_field)
from mechjax.analysis.imir.project import (coords, gram, inner, rel_residual, residual,
                                           solve_gram, weights)

# ``project`` stays the submodule (its function of the same name is ``project.project``).

__all__ = [
    "Basis", "Frame", "TokenStructure", "abgd_coordinates", "coords", "dense_basis",
    "exact_confinement", "fixed_params", "grad_residual", "gradient_descent", "gram",
    "imir_config", "inner", "integrate", "make_basis", "make_frame",
    "max_rel_deviation", "mc_confinement", "population_batch", "population_gradient",
    "population_loss_fn", "position_selections", "readout_accuracy", "readout_loss",
    "rel_residual", "residual", "solve_gram", "token_selections", "trainable_names",
    "vector_field", "weights", "zero_trainables",
]
