"""``mechanism_summary``: the progress measures plus the paper's mechanism numbers in one call."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from mechjax.studies.assign_add_mech.cosines import attn_out_cosines, mlp_input_cosines
from mechjax.studies.assign_add_mech.data import PairedData, ProbeData, resolve_cfg
from mechjax.studies.assign_add_mech.fourier import fourier_fit, mlp_preactivation_maps
from mechjax.studies.assign_add_mech.progress import progress_measures
from mechjax.studies.assign_add_mech.weight_space import qk2_diagonal_fraction
from mechjax.models.config import ModelConfig
from mechjax.models.transformer import Params
from mechjax.tasks import assign_add as aa


def mechanism_summary(params: Params, data: ProbeData, paired: PairedData,
                      cfg: ModelConfig | None = None) -> dict[str, jax.Array]:
    """Progress measures plus the Assign-and-Add mechanism numbers, all scalars (vmappable).

    ``fourier_max_*``: the neuron with the best single-frequency fit; ``fourier_top_*``: the
    neuron whose pre-activation map has the largest variance (the most active neuron).
    """
    cfg = resolve_cfg(cfg)
    out = progress_measures(params, data, cfg)
    mlp_cos = mlp_input_cosines(params, paired, cfg)
    maps = mlp_preactivation_maps(params, cfg)
    fit = fourier_fit(maps)
    best = jnp.argmax(fit.best_evr)
    top = jnp.argmax(jnp.var(maps, axis=(0, 1)))
    out.update({"mlp_in_cos_matched": mlp_cos["matched"].mean(),
                "mlp_in_cos_mismatched": mlp_cos["mismatched"].mean(),
                "attn_out_cos_literal": attn_out_cosines(params, paired.literal, cfg).mean(),
                "attn_out_cos_variable": attn_out_cosines(params, data.tokens, cfg).mean(),
                "fourier_max_evr": fit.best_evr[best],
                "fourier_max_k": fit.best_k[best],
                "fourier_top_evr": fit.best_evr[top],
                "fourier_top_k": fit.best_k[top],
                "qk2_diagonal_count": qk2_diagonal_fraction(params, cfg) * aa.N_VARS})
    return out
