"""Operand variables: the positional restriction and, per sequence kind, the candidate operands."""
from __future__ import annotations

import dataclasses
from typing import Literal, Sequence

import numpy as np

from mechjax.tasks.assign_add.vocab import N_VARS

# default positional restriction (variable indices 0..11 = a..l)
LEFT_FORBIDDEN = (10, 11)  # k, l never the left operand in training
RIGHT_FORBIDDEN = (0, 1)  # a, b never the right operand in training


@dataclasses.dataclass(frozen=True)
class Restriction:
    """Positional restriction: variables (indices 0..11) forbidden as left / right operand."""

    left_forbidden: tuple[int, ...] = LEFT_FORBIDDEN
    right_forbidden: tuple[int, ...] = RIGHT_FORBIDDEN

    def n_misplaced(self, v1: int, v2: int) -> int:
        return int(v1 in self.left_forbidden) + int(v2 in self.right_forbidden)

    def two_var_pairs(self, misplaced: int | Sequence[int]) -> np.ndarray:
        """Ordered operand pairs ``[n, 2]`` (v1 != v2) with the given number(s) of violations."""
        wanted = {misplaced} if isinstance(misplaced, int) else set(misplaced)
        return np.asarray([(a, b) for a in range(N_VARS) for b in range(N_VARS)
                           if a != b and self.n_misplaced(a, b) in wanted], np.int32).reshape(-1, 2)


VarMode = Literal["allowed", "restricted", "one_misplaced", "two_misplaced", "any"]


def var_tables(restriction: Restriction, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Per kind, the candidate operand-variable pairs: ``table [4, 132, 2]``, ``count [4]``.

    Column 0 is the left variable (used by LHS and 2-var), column 1 the right (RHS and 2-var).
    A kind with no candidates in ``mode`` gets count 0 (it must then have zero probability).
    """
    all_vars = list(range(N_VARS))
    lf, rf = restriction.left_forbidden, restriction.right_forbidden
    if mode == "allowed":
        lhs = [v for v in all_vars if v not in lf]
        rhs = [v for v in all_vars if v not in rf]
        two = restriction.two_var_pairs(0)
    elif mode == "restricted":
        lhs, rhs, two = list(lf), list(rf), restriction.two_var_pairs((1, 2))
    elif mode == "one_misplaced":
        lhs, rhs, two = [], [], restriction.two_var_pairs(1)
    elif mode == "two_misplaced":
        lhs, rhs, two = [], [], restriction.two_var_pairs(2)
    elif mode == "any":
        lhs, rhs, two = all_vars, all_vars, restriction.two_var_pairs((0, 1, 2))
    else:
        raise ValueError(f"unknown variable mode {mode!r}")
    rows = [np.zeros((1, 2), np.int32),
            np.asarray([(v, 0) for v in lhs], np.int32).reshape(-1, 2),
            np.asarray([(0, v) for v in rhs], np.int32).reshape(-1, 2),
            np.asarray(two, np.int32).reshape(-1, 2)]
    table = np.zeros((4, N_VARS * (N_VARS - 1), 2), np.int32)
    for k, r in enumerate(rows):
        table[k, :len(r)] = r
    return table, np.asarray([len(r) for r in rows], np.int32)
