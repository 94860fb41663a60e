"""Assign and Add (arXiv 2605.31497): variable binding plus modular addition, p = 59.

A sequence is 16 tokens: a 12-token prefix of shuffled assignments ``var value`` with PAD gaps,
then the prefix-notation query ``+ x y =`` at positions 12-15. ``x`` and ``y`` are numbers or
variables; the label ``(value(x) + value(y)) mod 59`` is read at ``=`` (``readout=-1``).

Vocabulary (74): numbers 0..58, ``+`` 59, ``=`` 60, ``PAD`` 61, variables ``a..l`` 62..73.

Sequence kinds: 0-var ``+ n1 n2 =``, 1-var LHS ``+ v n2 =``, 1-var RHS ``+ n1 v =``, 2-var
``+ v1 v2 =`` (v1 != v2). The prefix holds n ~ U{1..6} assignments (U{2..6} for 2-var): the needed
ones plus distractors with fresh variables and uniform values, each variable at most once, shuffled;
the ``12 - 2n`` PADs each fall independently and uniformly into one of the ``n + 1`` gaps between
assignments, so a PAD never separates a variable from its value.

Partitions (the Assign-and-Add paper's):
  * held-out addition pairs: the 3481 ordered pairs are ranked by a fixed permutation
    (``PairSplit``); a pair is a training pair iff ``rank < n_train(f) = floor(f * 3481)``. ``f`` is
    a traced task parameter, so a sweep over ``f`` compiles once. ``authors_split()`` ranks by
    ``random.Random(42).sample(lexicographic pairs, 3481)``, whose first 2436 entries are exactly
    the authors' ``random.Random(42).sample(pairs, 2436)`` (Python's pool-based sample draws the
    same ``randbelow`` sequence for any ``k`` here), so ``f = 0.7`` reproduces their split.
    ``split_from_heldout(pairs)`` fixes the split to an explicit held-out list (``f`` is ignored).
  * positional restriction: in training 1-var/2-var queries, ``a, b`` are never the right operand
    and ``k, l`` never the left. Of the 132 ordered 2-var operand pairs, 92 are allowed, 36 have one
    misplaced variable, 4 have two.
  * training mix per training pair: 12 0-var rows, 10 LHS, 10 RHS, 10 2-var rows; each 2-var row is
    kept with probability ``r`` (traced). See ``make_train_sampler`` for how ``r`` is realised.

Exhaustive sets: all held-out pairs as 0-var sequences (1045 for the authors' split) and the
2-var "union" of 193,580 = 1045 * 92 + 2436 * 40 sequences: every held-out pair with every allowed
operand pair, plus every training pair with every misplaced operand pair (novel on exactly one
axis). Adding the 1045 * 40 = 41,800 doubly novel sequences (held-out pair *and* misplaced
variables) would give 235,380; the authors' count excludes them (1045 a + 2436 b = 193,580 has the
single solution a = 92, b = 40 with 0 <= a <= 132), ``include_doubly_novel=True`` adds them.

Choices the paper leaves open (documented here): the 2-var operand pair is uniform over the allowed
ordered pairs (not "left uniform, then right uniform"); the 1-var pools mix LHS and RHS 50/50;
the misplaced-variable pools and the misplaced half of the union use training pairs; evaluation
pools are drawn from the key each call (a fixed key gives a fixed pool).

Modules: ``vocab`` (tokens, layout, kinds, the architecture), ``splits`` (addition-pair splits),
``operands`` (the positional restriction and each kind's candidate operands), ``sequence`` (one
sequence from its uniforms, and decoding), ``sampling`` (random batches, the training sampler),
``pools`` (evaluation pools and exhaustive sets), ``task`` (the ``Task`` object).
"""
from mechjax.tasks.assign_add.operands import LEFT_FORBIDDEN, RIGHT_FORBIDDEN, Restriction, VarMode
from mechjax.tasks.assign_add.pools import (POOL_SIZE, POOLS, exhaustive_0var_heldout,
                                            exhaustive_2var_union, make_pool_sampler)
from mechjax.tasks.assign_add.sampling import make_train_sampler, sample_sequences
from mechjax.tasks.assign_add.sequence import (N_UNIFORMS, build_sequence, build_sequences,
                                               operand_value_positions, sequence_from_uniforms,
                                               sequence_kind, to_string)
from mechjax.tasks.assign_add.splits import (PairSplit, authors_split, load_heldout_pairs,
                                             seeded_split, split_from_heldout)
from mechjax.tasks.assign_add.task import make_task
from mechjax.tasks.assign_add.vocab import (D_VOCAB, EQ, KIND_NAMES, LHS, MAX_ASSIGN, N_PAIRS,
                                            N_VARS, P, PAD, PLUS, POS_EQ, POS_PLUS, POS_X, POS_Y,
                                            PREFIX_LEN, RHS, SEQ_LEN, TRAIN_ROWS, TWO_VAR, VAR0,
                                            VAR_NAMES, ZERO_VAR, model_config, var_token)

__all__ = [
    "D_VOCAB", "EQ", "KIND_NAMES", "LEFT_FORBIDDEN", "LHS", "MAX_ASSIGN", "N_PAIRS", "N_UNIFORMS",
    "N_VARS", "P", "PAD", "PLUS", "POOLS", "POOL_SIZE", "POS_EQ", "POS_PLUS", "POS_X", "POS_Y",
    "PREFIX_LEN", "RHS", "RIGHT_FORBIDDEN", "SEQ_LEN", "TRAIN_ROWS", "TWO_VAR", "VAR0",
    "VAR_NAMES", "ZERO_VAR", "PairSplit", "Restriction", "VarMode", "authors_split",
    "build_sequence", "build_sequences", "exhaustive_0var_heldout", "exhaustive_2var_union",
    "load_heldout_pairs", "make_pool_sampler", "make_task", "make_train_sampler", "model_config",
    "operand_value_positions", "sample_sequences", "seeded_split", "sequence_from_uniforms",
    "sequence_kind", "split_from_heldout", "to_string", "var_token",
]
