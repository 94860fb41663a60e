"""python -m experiments.clock_pizza --workdir=DIR [--config=...] [--config.key=value] [--overwrite]

python -m experiments.clock_pizza --run=RUN --workdir=DIR: measure a saved run, train nothing."""
from experiments.clock_pizza import run
from experiments.clock_pizza.schema import ALIASES, SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA, aliases=ALIASES)
