"""Reddy (ICLR 2024) sizes: D = 63, N = 8, L = 32, eps = 0.1, K up to 2048 (as the IMIR paper cites
them). Step counts are ours (Reddy trains to ~1e5 iterations at batch 128); not run on CPU."""
import ml_collections


def _sweep(knob, values, steps, n_labels=0, chunk_evals=10, k=0.0):
    return ml_collections.ConfigDict(dict(knob=knob, values=tuple(values), n_labels=n_labels,
                                          steps=steps, chunk_evals=chunk_evals, k=k))


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.n_seeds = 6
    config.seed_offset = 0
    config.icl_formed = 0.75
    config.theory_min_count = 100.0
    config.run_sweeps = ("K", "B", "eps", "alpha", "l_eq_n", "long")
    config.task = ml_collections.ConfigDict(dict(
        d=63, n_ctx=8, n_labels=32, k_max=2048, k=512.0, burstiness=4.0, noise=0.1, zipf=0.0,
        data_seed=0))
    config.train = ml_collections.ConfigDict(dict(
        optimizer="adam", lr=1e-2, weight_decay=0.0, batch_size=128, eval_size=1000,
        eval_every=1000, mlp_width=128))
    steps = 100_000
    config.sweeps = ml_collections.ConfigDict(dict(
        K=_sweep("K", (128, 512, 2048), steps),
        B=_sweep("B", (0, 1, 2, 4), steps),
        eps=_sweep("eps", (0.0, 0.1, 0.4, 0.8), steps),
        alpha=_sweep("alpha", (0.0, 1.0, 2.0), steps),
        l_eq_n=_sweep("B", (4.0,), steps, n_labels=8),
        # Reddy's training mixtures at L = N (configs/mixtures.py runs them)
        l_eq_n_p_b=_sweep("p_B", (0.25, 0.5, 0.75, 1.0), steps, n_labels=8),
        l_eq_n_p_c=_sweep("p_C", (0.0, 0.25, 0.5, 0.75), steps, n_labels=8),
        p_b=_sweep("p_B", (0.25, 0.5, 0.75, 1.0), steps),
        long=_sweep("weight_decay", (0.0, 1e-4), 4 * steps),
    ))
    return config
