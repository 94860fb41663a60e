"""Forward passes of the IMIR model: the readout loss through the engine (``loss``), the forward
pass in manifold coordinates (``coordinates``) and the truncated populated-path forward
(``truncated``)."""
from mechjax.analysis.imir.forward.coordinates import Features, class_losses, features, logits
from mechjax.analysis.imir.forward.loss import readout_accuracy, readout_loss
from mechjax.analysis.imir.forward.truncated import (CoordinateConfig, coordinate_model,
                                                      truncated_forward, truncated_model)

__all__ = ["CoordinateConfig", "Features", "class_losses", "coordinate_model", "features", "logits",
           "readout_accuracy", "readout_loss", "truncated_forward", "truncated_model"]
