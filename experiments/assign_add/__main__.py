"""python -m experiments.assign_add --workdir=DIR [--config=...] [--config.key=value] [--overwrite]

Default config: ``configs/cpu.py`` (8 seeds, CPU scale). ``--config=experiments/assign_add/configs/
paper.py`` is the paper's setup exactly.
"""
from experiments.assign_add import run
from experiments.assign_add.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
