"""Algorithmic Core Extraction (ACE, arXiv 2602.22600; docs/ace.md).

One module per step, everything re-exported here (``from mechjax.analysis import ace;
ace.extract(...)``):

* ``reads``     -- the activation at a hook and the tail Jacobians after it
* ``extract``   -- Gramians, balanced truncation, the energy rank (2.1)
* ``validate``  -- core-only / core-removed interventions, causal rank scans, r_nec, r_suf (2.2)
* ``identify``  -- the operator across positions or across answers (2.3)
* ``compare``   -- cores across seeds: overlaps, principal angles, CCA, weight cosine (2.4)
* ``pipeline``  -- all of it on one model as one pure function, batched over seeds and
  checkpoints (``analyse``, ``analyse_seeds``, ``analyse_stack``)
* ``basis``     -- rank masks and projectors shared by the others

Everything is a pure function of arrays, so it jits and vmaps over seeds and checkpoints. Where a
step is data-dependent in size (the rank r of a core) the functions return full-size arrays plus
``r`` as an int array; a rank *mask* zeroes the unused columns (see ``basis``). Public functions are
jitted (configs, hook names and callables static), so an eager call runs as one compiled program,
and they inline into an outer jit/vmap. Precision: see ``extract``.
"""
# Re-exports: the public API of every step module.
# flake8: noqa: F401
from mechjax.analysis.ace.basis import (as_float, mask_basis, projector, rank_mask, symmetric,
                                        truncate)
from mechjax.analysis.ace.compare import (cca, cca_matrix, check_keep_coords, flatten_params,
                                          offdiag_mean, overlap_matrix, pairwise,
                                          principal_angle_matrix, principal_angles,
                                          projector_overlap, weight_cosine, weight_cosine_matrix)
from mechjax.analysis.ace.extract import (Core, Gramians, balanced_truncation, covariance,
                                          energy_rank, extract, extract_data_form,
                                          extract_from_gramians, gramians, linear_observability,
                                          observability, psd_factor)
from mechjax.analysis.ace.identify import (MarkovFit, ShiftFit, class_means, cyclic_shift,
                                           eigenvalue_errors, markov_operator)
from mechjax.analysis.ace.pipeline import (IDENTIFICATIONS, TAILS, VALIDATIONS, Inputs,
                                           Pipeline, Result, analyse, analyse_linear,
                                           analyse_seeds, analyse_stack, check_linear_tail,
                                           precision, unembed)
from mechjax.analysis.ace.reads import (ACE_CHUNK, ACE_SEED_BLOCK, activations, hook_jacobians,
                                        jacobian_samples, tail_jacobians)
from mechjax.analysis.ace.validate import (Metric, causal_scan, causal_scan_last_block,
                                           centred_hook, core_only_hook,
                                           core_removed_hook, intervened_metric,
                                           linear_tail_scan, r_nec, r_suf, reads_last_block,
                                           validate, validate_centred, validate_last_block)
