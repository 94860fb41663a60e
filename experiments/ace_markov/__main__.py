"""python -m experiments.ace_markov --workdir=DIR [--config=...] [--config.key=value] [--overwrite]"""
from experiments.ace_markov import run
from experiments.ace_markov.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
