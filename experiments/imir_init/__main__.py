"""python -m experiments.imir_init --workdir=DIR [--config=experiments/imir_init/configs/cpu.py]
[--config.KEY=VALUE] [--overwrite]"""
from experiments.imir_init import run
from experiments.imir_init.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
