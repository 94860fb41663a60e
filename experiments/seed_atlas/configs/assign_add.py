"""The seed atlas of an Assign-and-Add run (pass --run=RUN): seeds bound / never bound by their
final 1-var restricted accuracy, the seven progress measures per seed at every saved step, and
the earliest step from which one measure's threshold (fit on half the seeds) tells them apart."""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.run = ""  # required on the command line: --run=RUN
    config.sweep = ""
    # Never-bound seeds of the paper-scale run sit at chance (0.02-0.03, 1/59) on the restricted
    # pool, bound ones at 0.96-1.0: any cut between separates them.
    config.outcome = "acc/1var_restricted"
    config.bound_at = 0.5
    config.probe_size = 512
    config.probe_seed = 1234
    config.min_accuracy = 0.9
    return config
