"""ACE cores of the binding circuit across the seeds of an Assign-and-Add run (pass --run=RUN):
the core at the layer-2 MLP input at `=` per seed, the seeds x seeds overlap and CCA, the groups
they form against the seeds' outcome (default: bound / never bound by the final 1-var restricted
accuracy; for a run where every seed binds, phase 3 by the end is
``--config.outcome=acc/2var_two_misplaced --config.bound_at=0.9``)."""
import ml_collections


def get_config() -> ml_collections.ConfigDict:
    config = ml_collections.ConfigDict()
    config.run = ""  # required on the command line: --run=RUN
    config.sweep = ""
    config.step = 0  # the last saved step
    config.outcome = "acc/1var_restricted"
    config.bound_at = 0.5
    config.outcome_step = 0
    config.probe_size = 512
    config.jac_samples = 128
    config.probe_seed = 1234
    config.tau = 0.999
    config.float64 = True
    # the trained atlas32 cores have 17-22 dimensions at tau 0.999 (measured)
    config.compare_dims = 32
    return config
