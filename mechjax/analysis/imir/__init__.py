"""IMIR (arXiv 2607.11875): the invariant manifold of attention-only transformers on block-list
tasks, as subpackages by concept (docs/imir.md opens with the map).

``manifold``   the model frame, the manifold basis, weights <-> coordinates, confinement, the
               4-coordinate (alpha, beta, gamma, delta) sub-manifold;
``forward``    the readout loss, the forward pass in coordinates, the truncated (populated-path)
               forward;
``dynamics``   the exact reduced model (one vector field), the one ODE solver, the compiled grid
               solver, the enumerated field (the tests' reference), the closed-form 4-coordinate
               model (a labelled comparison);
``cells``      full transformers trained on grid cells (the theory's and the standard
               architecture) and plain SGD;
``phase``      phase-diagram read-offs, the exact diagrams, their checks, the 4-coordinate
               comparison;
``theorems``   Theorems 2 and 3 and the emergence order;
``detection``  circuit detection on trained weights;
``routes``     competing induction routes of deep models and which one wins.
"""
