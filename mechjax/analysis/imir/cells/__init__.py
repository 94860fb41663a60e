"""Full transformers trained on phase-diagram cells: the theory's architecture (``theory``), the
standard one (``standard``), and plain SGD (``sgd``)."""
from mechjax.analysis.imir.cells.sgd import descend
from mechjax.analysis.imir.cells.standard import train_standard_cells
from mechjax.analysis.imir.cells.theory import train_cells

__all__ = ["descend", "train_cells", "train_standard_cells"]
