"""The command line of ``python -m experiments.<name>``: each experiment's config declared once
(``schema``: keys, meanings, allowed values, one-line errors) and the shared start-up
(``experiment``: flags, workdir checks, ``run_cli``)."""
from mechjax.cli import experiment, schema
from mechjax.cli.experiment import run_cli
from mechjax.cli.schema import Schema, Section

__all__ = ["Schema", "Section", "experiment", "run_cli", "schema"]
