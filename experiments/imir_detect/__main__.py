"""python -m experiments.imir_detect --workdir=DIR [--config=...] [--config.tau=...]
[--weights=FILE.npz --causal=True|False | --from_workdir=RUN --seed=N [--step=K]]
[--config.weights_setting=khop]
[--overwrite]"""
from experiments.imir_detect import run
from experiments.imir_detect.schema import ALIASES, SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA, aliases=ALIASES)
