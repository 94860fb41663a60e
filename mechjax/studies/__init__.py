"""Per-paper studies: the analyses one experiment of a paper runs, built on the methods of
``mechjax.analysis``. Import the module you need (``from mechjax.studies import grokking_core``).

Assign and Add (arXiv 2605.31497): ``assign_add_mech`` (the mechanism: data, Fourier, cosines,
weight space, progress measures), ``assign_add_final``, ``binding_cores``.

Invariant algorithmic cores (arXiv 2602.22600): ``markov_cores``, ``grokking_core``,
``grokking_dynamics``, ``agreement_cores``, ``agreement_generation``.

Beyond the papers: ``grokking_law`` (grokking time against the training fraction),
``clock_pizza`` and ``rate_core`` (Zhong et al. 2023's attention rate), ``icl_minimal_map``
(Reddy's in-context task against the IMIR map).
"""
