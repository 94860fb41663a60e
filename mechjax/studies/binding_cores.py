"""ACE cores where an Assign-and-Add model reads the variables it bound (docs/seed_atlas.md).

The site is the residual stream at the layer-2 MLP input (``blocks.1.hook_resid_mid``) at the
``=`` position, on 2-var queries ``+ v1 v2 =`` (allowed operands, training pairs). Why there: the
prefix is the only place the operand values appear, and in a 2-var query both operands are
variables, so whatever the ``=`` position knows about their values arrived through the two
attention layers, i.e. through binding (the layer-2 head attends from ``=`` to the value bound to
each queried variable, the layer-1 head having moved each variable's name onto its value). After
this point only the layer-2 MLP and the unembedding act, position by position: the MLP does the
addition from what binding delivered. So the ACE target is the answer
``(value(v1) + value(v2)) mod 59``: a function of the two bound values and nothing else, read
through the rest of the model (``tail='logits'``: the Jacobians of the MLP and unembedding at
``=``, their Gramian is what the addition reads). The core is then the subspace in which the
bound values vary across queries *and* the addition reads them; validation (core only / core
removed, uncentred, at every position, where only ``=`` reaches the answer) checks that it
carries the answer.

``binding_inputs`` draws the queries, ``binding_pipeline`` is the ``ace.Pipeline`` of the site,
``binding_cores`` runs it on every seed of stacked parameters (``timing.over_seeds``: vmapped or
a loop, as the backend suits), ``compare_cores`` gives the seeds x seeds projector overlap and CCA
(``ace.overlap_matrix`` / ``ace.cca_matrix``) and groups the seeds with
``seed_atlas.cluster_seeds``, scored against given labels (``seed_atlas.agreement``).

Shapes: n seeds, B queries, S Jacobian samples, D width, k compared core coordinates.
"""
from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.analysis import ace
from mechjax.analysis import seed_atlas as sa
from mechjax.studies.assign_add_mech import data as mech_data
from mechjax.models.config import ModelConfig
from mechjax.tasks import assign_add as aa
from mechjax.sweeps.timing import over_seeds

HOOK = "blocks.1.hook_resid_mid"  # the layer-2 MLP input
POSITION = aa.POS_EQ               # the answer is read at `=`


def binding_inputs(key: jax.Array, n: int, n_jac: int, split: aa.PairSplit,
                   f: float) -> ace.Inputs:
    """``n`` 2-var queries (tokens ``[n, 16]``, answers ``[n]``) and the first ``n_jac`` of them
    as Jacobian samples at ``=``."""
    probe = mech_data.probe_data(key, n, split, f)
    return ace.Inputs(probe.tokens, probe.labels, probe.tokens[:n_jac],
                      jnp.full((n_jac,), POSITION, jnp.int32))


def binding_pipeline(tau: float = 0.999, float64: bool = True,
                     keep_coords: int = 16) -> ace.Pipeline:
    """ACE at the site: the logits tail, uncentred core-only / core-removed validation, the
    cyclic-shift operator across the answers' class means, ``keep_coords`` core coordinates kept
    for CCA."""
    return ace.Pipeline(hook_name=HOOK, position=POSITION, tail="logits", validation="hooks",
                        identify="cyclic_shift", tau=tau, float64=float64,
                        keep_coords=keep_coords)


def binding_cores(params: Mapping[str, Any], inputs: ace.Inputs, cfg: ModelConfig,
                  pipe: ace.Pipeline, vectorize: str = "auto"
                  ) -> tuple[ace.Result, dict[str, Any]]:
    """ACE on every seed of ``params {name: [n, ...]}``: ``(Result with fields [n, ...],
    timing)``."""
    with ace.precision(pipe.float64):
        return over_seeds(lambda p, x: ace.analyse(p, x, cfg, pipe), params, inputs,
                          vectorize=vectorize)


def _cca_floor(coords: jax.Array, ranks: jax.Array, compare_dims: int, top: int
               ) -> dict[str, float]:
    """Mean off-diagonal CCA (top-r and top-``top``) after permuting each seed's queries."""
    rng = np.random.default_rng(0)
    z = np.asarray(coords)                                                    # [n, B, k]
    z = jnp.asarray(np.stack([c[rng.permutation(len(c))] for c in z]))
    return {"cca": ace.offdiag_mean(ace.cca_matrix(z, jnp.minimum(ranks, compare_dims))),
            f"cca_top{top}": ace.offdiag_mean(ace.cca_matrix(z[..., :top], None, top))}


def compare_cores(result: ace.Result, labels: np.ndarray, compare_dims: int, top: int = 3
                  ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Seeds x seeds overlap (``[n, n]``, ranks masked), mean top-r CCA of the first
    ``compare_dims`` core coordinates (r = the smaller core, at most ``compare_dims``) and mean CCA
    of the ``top`` leading coordinates alone (the strongest directions: with r ~ 20 coordinates
    on a few hundred queries the tail of the r correlations is partly sampling noise), each
    clustered with ``cluster_seeds`` and compared with ``labels [n]`` (``agreement.contrast``),
    plus ``cca_floor``: both CCAs with every seed's queries shuffled independently, the level
    that no shared statistics reach at this number of queries and coordinates.
    Returns ``(summary, matrices)``."""
    ranks = jnp.asarray(result.core.rank)
    top = min(top, compare_dims)
    with ace.precision(result.core.basis.dtype == jnp.float64):
        mats = {"overlap": ace.overlap_matrix(result.core.basis, ranks),
                "cca": ace.cca_matrix(result.coords, jnp.minimum(ranks, compare_dims)),
                f"cca_top{top}": ace.cca_matrix(result.coords[..., :top], None, top)}
        floor = _cca_floor(result.coords, ranks, compare_dims, top)
    mats = {k: np.asarray(v, np.float64) for k, v in mats.items()}
    dims = np.asarray(ranks).astype(int)
    summary = {"core_dim": dims.tolist(),
               "core_dim_by_label": {str(g): dims[labels == g].tolist() for g in np.unique(labels)},
               "overlap_chance": float(dims.mean()) / np.asarray(result.core.basis).shape[-2]}
    for name, m in mats.items():
        summary[name] = sa.contrast(m, labels, sa.cluster_seeds(m))
    summary["cca_floor"] = floor
    summary["accuracy"] = {k: np.asarray(v, np.float64).tolist()
                           for k, v in result.accuracy.items()}
    return summary, mats
