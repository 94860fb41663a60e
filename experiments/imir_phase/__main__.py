"""python -m experiments.imir_phase --workdir=DIR [--config=...] [--config.key=value] [--overwrite]"""
from experiments.imir_phase import run
from experiments.imir_phase.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
