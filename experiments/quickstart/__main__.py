"""python -m experiments.quickstart --workdir=DIR [--config=...] [--config.key=value] [--overwrite]"""
from experiments.quickstart import run
from experiments.quickstart.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
