"""Analysis methods that apply to any trained model, batched over seeds:

* ``ace``        -- Algorithmic Core Extraction (arXiv 2602.22600): cores, validation, comparison
* ``imir``       -- the invariant manifold of inductive reasoning (arXiv 2607.11875): its basis,
  reduced ODE, phase diagrams, theorems and circuit detection
* ``seed_atlas`` -- which seeds share a mechanism: similarity, clusters, thresholds
* ``fourier``, ``exhaustive``, ``curves``, ``seeds`` -- Fourier spectra, exhaustive evaluation,
  learning-curve read-offs, statistics over seeds

Per-paper studies built on these live in ``mechjax.studies``.
"""
