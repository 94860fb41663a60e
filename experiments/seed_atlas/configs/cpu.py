"""The seed atlas of a quickstart run: seeds grouped by their test-accuracy trajectories, then
Fourier sparsity of W_E, weight norm and the accuracies ranked (seconds; pass --run=RUN)."""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.run = ""  # required on the command line: --run=RUN
    config.sweep = ""
    config.grid = 0
    config.metrics = ("acc/train", "acc/test")
    config.fourier_k = 5
    config.group_by = ("acc/test",)
    config.min_silhouette = 0.5
    config.min_accuracy = 0.9
    return config
