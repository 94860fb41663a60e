"""python -m experiments.seed_atlas [--config=...] --run=RUN --workdir=DIR [--config.key=value]
[--overwrite] (a --config file goes before --run and the other overrides)"""
from experiments.seed_atlas import run
from experiments.seed_atlas.schema import ALIASES, SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA, aliases=ALIASES)
