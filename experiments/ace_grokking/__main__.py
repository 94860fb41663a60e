"""python -m experiments.ace_grokking --workdir=DIR [--config=...] [--config.key=value] [--overwrite]"""
from experiments.ace_grokking import run
from experiments.ace_grokking.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
