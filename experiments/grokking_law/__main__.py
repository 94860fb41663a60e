"""python -m experiments.grokking_law --workdir=DIR [--config=...] [--config.key=value] [--overwrite]"""
from experiments.grokking_law import run
from experiments.grokking_law.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
