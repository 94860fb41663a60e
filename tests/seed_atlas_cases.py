"""Planted seed splits for the seed atlas tests: synthetic measure tables and core subspaces
whose group structure is known."""
from __future__ import annotations

import numpy as np

N_SEEDS = 12
STEPS = np.arange(0, 200, 10)  # 20 saves
SPLIT_INDEX = 8                # the planted split: step 80
# groups interleaved, not in seed order, so that nothing can pass by reading rows in order
GROUP = np.array([0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0])


def planted_table(split: float = 1.0, seed: int = 0) -> dict[str, np.ndarray]:
    """``{name: [12, 20]}``: ``binding`` is a shared curve plus noise (sd 0.1) until step 80,
    from where group 1 moves up by ``split`` (growing 0.1 a save); ``drift`` is a random walk per
    seed, ``jitter`` independent noise, ``shared`` one curve for all seeds plus small noise. None
    but ``binding`` knows the groups. ``split=0`` is the no-split control."""
    rng = np.random.default_rng(seed)
    t = np.arange(STEPS.size, dtype=float)
    curve = 1.0 - np.exp(-t / 5.0)
    after = np.where(t >= SPLIT_INDEX, 1.0 + 0.1 * (t - SPLIT_INDEX), 0.0)
    binding = curve + 0.1 * rng.standard_normal((N_SEEDS, t.size)) \
        + split * GROUP[:, None] * after
    return {"binding": binding,
            "drift": np.cumsum(0.3 * rng.standard_normal((N_SEEDS, t.size)), axis=1),
            "jitter": rng.standard_normal((N_SEEDS, t.size)),
            "shared": 2.0 * curve + 0.05 * rng.standard_normal((N_SEEDS, t.size))}


def planted_bases(d: int = 32, r: int = 3, spread: float = 0.3, seed: int = 0) -> np.ndarray:
    """``[12, d, r]`` orthonormal bases: seeds of one group share a random subspace (each one
    tilted by ``spread`` times a random matrix), the two groups' subspaces are independent."""
    rng = np.random.default_rng(seed)
    centres = [rng.standard_normal((d, r)) for _ in range(2)]
    bases = [np.linalg.qr(centres[g] + spread * rng.standard_normal((d, r)))[0] for g in GROUP]
    return np.stack(bases).astype(np.float32)


def planted_coordinates(n_inputs: int = 64, r: int = 3, noise: float = 0.3,
                        seed: int = 0) -> np.ndarray:
    """``[12, n_inputs, r]`` core coordinates on shared inputs: each group reads its own random
    latent ``[n_inputs, r]`` through a random mixing per seed, plus noise."""
    rng = np.random.default_rng(seed)
    latents = [rng.standard_normal((n_inputs, r)) for _ in range(2)]
    z = [latents[g] @ rng.standard_normal((r, r)) + noise * rng.standard_normal((n_inputs, r))
         for g in GROUP]
    return np.stack(z).astype(np.float32)
