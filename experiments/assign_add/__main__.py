"""python -m experiments.assign_add --workdir=DIR [--config=...] [--config.key=value] [--overwrite]

Default config: ``configs/cpu.py`` (8 seeds, CPU scale). ``--config=experiments/assign_add/configs/
paper.py`` is SPEC 1.3 exactly.
"""
import os

from absl import app, flags
from ml_collections import config_flags

from experiments.assign_add import run
from mechjax.experiment import quiet_library_logs

_CONFIG = config_flags.DEFINE_config_file(
    "config", os.path.join(os.path.dirname(__file__), "configs", "cpu.py"), "experiment config")
_WORKDIR = flags.DEFINE_string("workdir", None,
                               "run folder (config, checkpoints, figures, summary)")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "replace a run of a different config in workdir")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    quiet_library_logs()
    summary = run.run(_CONFIG.value, _WORKDIR.value, overwrite=_OVERWRITE.value)
    print(run.format_summary(summary))


if __name__ == "__main__":
    flags.mark_flag_as_required("workdir")
    app.run(main)
