"""Circuit detection on trained weights: the pipeline (``detector``), greedy elimination
(``elimination``), circuit units (``circuits``), explanations (``explain``), heads (``heads``)
and the sources of a run (``sources``)."""
from mechjax.analysis.imir.detection.detector import Detection, detect
from mechjax.analysis.imir.detection.elimination import Elimination, eliminate

__all__ = ["Detection", "Elimination", "detect", "eliminate"]
