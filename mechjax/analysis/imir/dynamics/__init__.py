"""Reduced dynamics on the manifold. ``model``: the exact model and its one vector field
(``ExactRecall.field``), which every feature integrates; ``solver``: the one ODE solver (diffrax);
``grid``: the compiled grid solver every diagram uses; ``reference``: the enumerated field, the
tests' independent reference; ``four_coord``: the closed-form 4-coordinate model, a labelled
comparison."""
from mechjax.analysis.imir.dynamics.four_coord import RecallSizes
from mechjax.analysis.imir.dynamics.grid import cells_solver, solve_cells, timed_cells
from mechjax.analysis.imir.dynamics.model import ExactRecall, abgd_init, make
from mechjax.analysis.imir.dynamics.reference import enumerated_field, population_loss_fn
from mechjax.analysis.imir.dynamics.solver import solve, solve_capped, solve_with_stats

__all__ = ["ExactRecall", "RecallSizes", "abgd_init", "cells_solver", "enumerated_field", "make",
           "population_loss_fn", "solve", "solve_capped", "solve_cells", "solve_with_stats",
           "timed_cells"]
