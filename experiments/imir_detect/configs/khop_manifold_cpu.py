"""``khop_cpu`` trained inside the manifold: the 5-layer 2-hop setting's coordinates theta are
the parameters (``mechjax.analysis.imir.forward.coordinate_model``), so every step stays on the
span the detector reads and the explained fraction is 1. The start is the projection of
``khop_cpu``'s own random init. ``--config.khop.optimizer=sgd --config.khop.lr=X`` trains with
plain gradient descent instead of Adam."""
from experiments.imir_detect.configs import khop_cpu


def get_config():
    c = khop_cpu.get_config()
    c.khop.train_in = "manifold"
    return c
