"""python -m experiments.icl_minimal --workdir=DIR [--config=...] [--config.key=value] [--overwrite]"""
from experiments.icl_minimal import run
from experiments.icl_minimal.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
