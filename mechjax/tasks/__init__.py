"""Tasks: pure samplers of batches from keys (the contract is ``base.Task``).

``modular`` (modular arithmetic), ``markov`` (a Markov chain), ``assign_add`` (variable binding
plus addition), ``blocklist`` (the IMIR block-list tasks), ``icl_minimal`` (Reddy's in-context
classification), ``agreement`` and ``agreement_corpus`` (subject-verb agreement).
"""
from mechjax.tasks.base import Task

__all__ = ["Task"]
