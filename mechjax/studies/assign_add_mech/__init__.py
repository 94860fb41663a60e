"""Assign-and-Add mechanism (docs/assign_add.md): progress measures, cosines, Fourier fits.

Paper layer 1 / layer 2 are ``blocks.0`` / ``blocks.1``. Every analysis is a pure function of a
parameter dict (plus fixed probe data built once by ``probe_data``), so stacking checkpoints or
seeds along a leading axis and calling ``jax.vmap(fn, in_axes=(0, None))`` evaluates them all in
one compiled program. Activations come from ``mechjax.models.hooks`` (``run_with_cache`` /
``run_with_hooks``); weight-space quantities (QK and OV products) read the parameters directly.

Progress measures (``progress_measures``):
  ov_mlp_accuracy     feed ``x = (e_n + e_m) W_V2 W_O2`` as the layer-2 residual at ``=`` (a hook
                      on ``blocks.1.hook_resid_mid``) through MLP2 and W_U; share of the 3481
                      pairs whose argmax is ``(n + m) mod 59``. ``e`` = token embedding ``W_E``.
  qk1_prev_token      share of prefix queries q = 1..11 whose positional QK1 row
                      ``W_pos W_Q1 W_K1^T W_pos^T`` over the earlier keys k < q peaks at q - 1
                      (the self key is excluded; see ``qk1_prev_token_fraction``).
  qk2_diagonal        share of the 12 variables v whose row of
                      ``(W_E[v] OV1) QK2 (W_E[w] OV1)^T`` peaks at w = v.
  attn1_eq_operands   layer-1 attention from ``=`` summed over the operand slots 13, 14.
  attn1_value_to_var  layer-1 attention from each prefix value to its variable (one back).
  attn2_eq_values     layer-2 attention from ``=`` summed over the two operand values' positions.
  probe_accuracy      closed-form ridge probe (one-hot targets, bias column) predicting the owning
                      variable from ``blocks.0.hook_resid_mid`` at prefix value positions; fitted on
                      the first half of the probe batch, scored on the second.
The attention measures and the probe use ``probe_data``: 2-var sequences with allowed operands and
training pairs (so every query reads two bound values).

Mechanism numbers (``mechanism_summary``):
  mlp_in_cos_*        cosine of ``blocks.1.hook_resid_mid`` at ``=`` between a 1-var sequence and
                      its literal twin (same prefix, the variable replaced by its value): matched;
                      against the next row's twin: mismatched (``paired_data``).
  attn_out_cos_*      cosine of ``blocks.1.hook_attn_out`` at ``=`` with ``(e_n1 + e_n2) OV2``:
                      on 0-var sequences (the literal twins; ``literal``) and on the 2-var probe
                      sequences (``variable``).
  fourier_*           single-frequency fits of the layer-2 MLP pre-activation maps over the core
                      inputs ``PAD*12 + n m =`` (``fourier_fit``), for the best-fitting neuron and
                      for the neuron with the largest pre-activation variance.

Modules: ``data`` (probe data, literal twins, core inputs), ``weight_space`` (QK1, QK2, the OV2
addition path), ``progress`` (attention measures, the probe, ``progress_measures``), ``cosines``,
``fourier``, ``summary`` (``mechanism_summary``).
"""
from mechjax.studies.assign_add_mech.cosines import attn_out_cosines, mlp_input_cosines
from mechjax.studies.assign_add_mech.data import PairedData, ProbeData, paired_data, probe_data
from mechjax.studies.assign_add_mech.fourier import (FourierFit, fourier_fit, mlp_fourier_fit,
                                                      mlp_preactivation_maps)
from mechjax.studies.assign_add_mech.progress import (attention_measures, progress_measures,
                                                       ridge_probe_accuracy,
                                                       variable_probe_accuracy)
from mechjax.studies.assign_add_mech.summary import mechanism_summary
from mechjax.studies.assign_add_mech.weight_space import (ov_mlp_accuracy, ov_mlp_logits,
                                                           positional_qk1,
                                                           qk1_prev_token_fraction,
                                                           qk2_diagonal_fraction, variable_qk2)

__all__ = [
    "FourierFit", "PairedData", "ProbeData", "attention_measures", "attn_out_cosines",
    "fourier_fit", "mechanism_summary", "mlp_fourier_fit", "mlp_input_cosines",
    "mlp_preactivation_maps", "ov_mlp_accuracy", "ov_mlp_logits", "paired_data",
    "positional_qk1", "probe_data", "progress_measures", "qk1_prev_token_fraction",
    "qk2_diagonal_fraction", "ridge_probe_accuracy", "variable_probe_accuracy", "variable_qk2",
]
