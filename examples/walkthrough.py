"""The walkthrough of docs/notebook.md as one script: open a finished quickstart run, look at seed 3.

    python -m experiments.quickstart --workdir=runs/quickstart
    python examples/walkthrough.py runs/quickstart [--figure=walkthrough.png] [--export=tl_seed3]

Opens the workdir with ``mechjax.sweeps.runs``, picks seed 3 at a saved step, computes its embedding's
Fourier spectrum, runs ACE on its last-layer residual stream, compares its core with seed 4's,
plots all of it, and exports seed 3 to TransformerLens (when torch is installed). Nothing from
``experiments/`` is imported: the run's files hold everything needed. The tests run this script
on a tiny quickstart run (tests/test_walkthrough.py).
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from mechjax.sweeps import runs
from mechjax.analysis import ace, fourier


def walkthrough(workdir: str, export_dir: str | None = None) -> dict[str, Any]:
    """Every step of docs/notebook.md; returns what each step computed (and the figure)."""
    # --- open the run: config, model, seeds and saved steps come from the workdir's files
    run = runs.open(workdir)
    cfg, p = run.model_cfg, run.config["task"]["p"]
    step = run.steps_saved[-1]   # any of run.steps_saved opens the same way
    params = {k: jnp.asarray(v) for k, v in run.params(seed=3, step=step).items()}

    # --- the embedding's Fourier spectrum: one norm per frequency k = 0 .. p // 2
    spectrum = np.asarray(fourier.frequency_norms(params["embed.W_E"]))
    top5 = float(fourier.top_k_energy_fraction(jnp.asarray(spectrum), 5))
    key_frequencies = sorted(int(k) for k in np.argsort(spectrum[1:])[::-1][:5] + 1)

    # --- ACE on the last layer's residual stream, read at the answer position, over all pairs
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    tokens = jnp.asarray(np.stack([a.ravel(), b.ravel()], 1), jnp.int32)   # [p * p, 2]
    labels = jnp.asarray((a.ravel() + b.ravel()) % p)                       # a + b mod p
    hook = f"blocks.{cfg.n_layers - 1}.hook_resid_post"

    def core_of(model_params):
        h = ace.activations(model_params, tokens, cfg, hook, position=-1)   # [p * p, d_model]
        # the tail after the last residual stream is the unembedding, a linear map: its
        # Jacobian is W_U^T at every sample
        return ace.extract(h, model_params["unembed.W_U"].T[None], tau=0.99)

    core3 = core_of(params)
    accuracy = {k: float(v) for k, v in ace.validate(params, tokens, labels, cfg, hook,
                                                     core3.core_basis, readout=-1).items()}

    # --- compare with seed 4's core at the same step (1: the same subspace, ~r/d: unrelated)
    params4 = {k: jnp.asarray(v) for k, v in run.params(seed=4, step=step).items()}
    core4 = core_of(params4)
    overlap = float(ace.projector_overlap(core3.basis, core4.basis, core3.rank, core4.rank))

    # --- plot (inline in a notebook; no backend is forced)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    axes[0].bar(np.arange(1, len(spectrum)), spectrum[1:])
    axes[0].set(xlabel="frequency k", ylabel="|FFT(W_E)|", title=f"seed 3, step {step}")
    axes[1].semilogy(np.arange(1, cfg.d_model + 1), np.maximum(np.asarray(core3.weights), 1e-12),
                     "o-", label=f"seed 3 (rank {int(core3.rank)})")
    axes[1].semilogy(np.arange(1, cfg.d_model + 1), np.maximum(np.asarray(core4.weights), 1e-12),
                     "s-", label=f"seed 4 (rank {int(core4.rank)})")
    axes[1].set(xlabel="direction", ylabel="ACE weight", title=f"cores, overlap {overlap:.2f}")
    axes[1].legend()
    m = run.metrics_at(grid=0)
    for i, seed in ((run.seed_index(3), 3), (run.seed_index(4), 4)):
        axes[2].plot(run.steps, m["acc/test"][i], label=f"seed {seed} test")
    axes[2].set(xlabel="step", ylabel="accuracy", title="test accuracy")
    axes[2].legend()
    fig.tight_layout()

    # --- export seed 3 to TransformerLens (needs the torch extra) and run it there
    tl_max_logit_difference = None
    if export_dir is not None:
        import torch

        from mechjax.interop import tl_export
        from mechjax.models.transformer import apply
        run.export_tl(seed=3, step=step, path=export_dir)
        model = tl_export.load(export_dir)
        with torch.no_grad():
            tl_logits = model(torch.from_numpy(np.asarray(tokens, np.int64))).numpy()
        ours = np.asarray(apply(params, tokens, cfg))
        tl_max_logit_difference = float(np.abs(tl_logits - ours).max())

    return {"step": step, "spectrum": spectrum, "top5_energy_fraction": top5,
            "key_frequencies": key_frequencies, "core_rank": int(core3.rank),
            "core_rank_seed4": int(core4.rank), "accuracy": accuracy, "overlap": overlap,
            "figure": fig, "tl_max_logit_difference": tl_max_logit_difference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workdir", help="a quickstart workdir with at least 5 seeds")
    parser.add_argument("--figure", help="save the figure here instead of showing it")
    parser.add_argument("--export", help="folder for the TransformerLens export of seed 3")
    args = parser.parse_args()
    out = walkthrough(args.workdir, args.export)
    for k, v in out.items():
        if k not in ("figure", "spectrum"):
            print(f"{k:>26s}: {v}")
    if args.figure:
        os.makedirs(os.path.dirname(os.path.abspath(args.figure)), exist_ok=True)
        out["figure"].savefig(args.figure, dpi=120)
    else:
        plt.show()


if __name__ == "__main__":
    main()
