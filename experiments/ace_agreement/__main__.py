"""python -m experiments.ace_agreement --workdir=DIR [--config=...] [--config.gpt2_paths=PATH,PATH]
[--config.key=value] [--overwrite]"""
from experiments.ace_agreement import run
from experiments.ace_agreement.schema import SCHEMA
from mechjax.cli.experiment import run_cli

if __name__ == "__main__":
    run_cli(run.run, run.format_summary, __file__, SCHEMA)
