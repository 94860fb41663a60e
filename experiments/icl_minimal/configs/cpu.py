"""CPU config (docs/icl_minimal.md): Reddy's N = 8, L = 32, eps = 0.1, but
D = 32 and batch 32 so that 6 seeds of every setting fit 2 shared cores; Adam at lr 1e-2 for
2000 steps, where the induction head forms at K >= 512, B = 2 (probe logs in the notes). Each
sweep sits where its knob moves the outcome: K at B = 2; B at K = 512; eps at K = 256 (at 512
every eps forms ICL); Zipf at K = 2048 (a tail of rare classes); L = N at the B sweep's B = 2."""
from experiments.icl_minimal.configs import paper


def get_config():
    config = paper.get_config()
    config.task.update(dict(d=32, k_max=2048, k=512.0, burstiness=2.0))
    config.train.update(dict(batch_size=32, eval_size=512, eval_every=500, mlp_width=64))
    for name, sweep in config.sweeps.items():
        sweep.steps = 2000
        sweep.chunk_evals = 2
    config.sweeps.K.values = (128, 512, 2048)
    config.sweeps.eps.k = 256.0
    config.sweeps.alpha.k = 2048.0
    config.sweeps.l_eq_n.values = (2.0,)
    # Trained 4x longer at K = 256 (near the boundary, where IWL can still catch up), weight
    # decay 0 vs 0.05 under AdamW.
    config.sweeps.long.update(dict(steps=8000, chunk_evals=4, k=256.0, values=(0.0, 0.05)))
    config.run_sweeps = ("K", "B", "eps", "alpha", "l_eq_n", "long")
    return config
