"""Read-offs from training curves shared by the experiments."""
from __future__ import annotations

import numpy as np

def first_crossing(steps: np.ndarray, values: np.ndarray, threshold: float) -> np.ndarray:
    """First entry of ``steps [n]`` at which ``values [..., n]`` is ``>= threshold``; NaN if never.

    ``steps[i]`` is the optimizer step after which ``values[..., i]`` was measured (1, 2, ... for
    an evaluation after every step). NaN values (steps past a run's end) never count as a hit.
    """
    values = np.asarray(values, float)
    steps = np.asarray(steps, float)
    if values.shape[-1] != steps.shape[-1]:
        raise ValueError(f"values have {values.shape[-1]} evaluations but steps has "
                         f"{steps.shape[-1]}")
    hit = np.nan_to_num(values, nan=-np.inf) >= threshold
    idx = np.argmax(hit, -1)
    return np.where(hit.any(-1), steps[idx], np.nan)
