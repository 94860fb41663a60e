"""Block-list tasks (IMIR, arXiv 2607.11875): jittable samplers and exact enumeration.

A sequence is a list of ``n_blocks`` blocks of ``block_len`` tokens; the last block is a partial
query (``block_len - 1`` tokens) and the target completes it. Instances (``BlockListSpec.kind``):

  recall  ``[a b] ... [a] -> b``                       (k = 2; 1-hop induction)
  khop    ``[a b] ... [b c] ... [a] -> c``             (k = 2; ``hops`` = 1..3 chained look-ups)
  ngram   ``[x1 .. xl] ... [x1 .. x(l-1)] -> xl``      (k = l; ``confusers`` share x(l-1))
  cond    ``[c key value] ... [c' key value'] ... [c key] -> value``  (k = 3; conditions c)
  ioi     ``[A B] ... [B] -> A`` or ``[A] -> B``       (k = 2; the query is either name)

Tokens. ids ``[0, n_common)`` are *common*: they form cycles of length ``cycle_len`` under the
association map ``C`` (``C(c*l + j) = c*l + (j+1) % l``; ``l = 2`` is a pairing). ids
``[n_common, n_common + n_rare)`` are *rare*: drawn without replacement per sequence, so they carry
no identity across sequences. ``cond`` adds ``n_cond`` condition tokens, ``linear_gap`` a pad.

Each sequence is built from *items* (chains of tokens). An item is rare with probability ``f_r``
(all its tokens fresh rare tokens) or common (a distinct cycle, uniform start ``x0``, then
``x(i+1) = C(x(i))``, except that with probability ``f_v`` a link's partner is replaced by a uniform
common token outside ``x(i)``'s cycle: within-class variability). The relevant item's blocks appear
``burstiness`` times; distractor items fill the other context slots; context blocks are shuffled.

Offsets (``BlockListSpec.offsets``):
  cyclic      the whole sequence (length T = n*k - 1) is rotated by a uniform offset in [0, T); the
              readout is the rotated query position. With non-causal attention and cyclic
              positions this is an exact symmetry (the IMIR theory needs it).
  fixed       no rotation: the query ends the sequence (breaks the cyclic position symmetry).
  linear_gap  a linear sequence: ``n_pad`` pad tokens dropped uniformly into the n gaps before
              the blocks; the query ends the sequence (for causal models).

Sampling and enumeration share one code path: a sequence is a pure function (``assemble``) of a
fixed list of independent categorical draws (``variables``); each draw is uniform or a Bernoulli
of a task parameter. ``sample`` draws them with ``jax.random``; ``enumerate_support`` lists every
combination, so tiny configurations have an exact population distribution whose probabilities are
traced functions of the task parameters (``support_probs``).

Batch (``readout=None``): ``tokens [b, T]``, ``labels [b, T]`` (the target at the query position,
0 elsewhere), ``weights [b, T]`` (one-hot at the query position), plus ``query_pos [b]``,
``target [b]``, ``is_rare [b]`` (the relevant item is rare).
Task parameters (traced scalars): ``f_r``, ``f_v`` and, with ``biased=True``, ``key_bias`` (the
probability that the relevant common item is forced onto cycle 0: an association-*breaking* bias).

Modules: ``spec`` (the specification and its symmetries), ``sampling`` (draws, ``assemble``,
Monte Carlo batches), ``population`` (exact enumeration), ``task`` (the ``Task`` object).
"""
from mechjax.tasks.blocklist.population import Support, enumerate_support, support_size
from mechjax.tasks.blocklist.sampling import (Var, assemble, draw, sample, to_batch, var_probs,
                                              variables)
from mechjax.tasks.blocklist.spec import KINDS, OFFSETS, BlockListSpec, Kind, Offsets, relabel
from mechjax.tasks.blocklist.task import blocklist_task

__all__ = [
    "KINDS", "OFFSETS", "BlockListSpec", "Kind", "Offsets", "Support", "Var", "assemble",
    "blocklist_task", "draw", "enumerate_support", "relabel", "sample", "support_size",
    "to_batch", "var_probs", "variables",
]
