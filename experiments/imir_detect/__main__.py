"""python -m experiments.imir_detect --workdir=DIR [--config=...] [--config.tau=...]
[--config.weights=FILE.npz --config.weights_setting=recall_icl] [--overwrite]"""
from experiments.imir_detect import run
from experiments.imir_detect.schema import SCHEMA
from mechjax.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
