"""mechjax.cli.experiment: short flags of run_cli (aliases) become --config.<key> overrides."""
from mechjax.cli.experiment import expand_aliases

ALIASES = {"weights": "weights", "seed": "from_seed"}


def test_aliases_become_config_overrides_in_both_flag_forms():
    argv = ["prog", "--workdir=w", "--weights=a.npz", "--seed", "3", "--config.tau=0.1",
            "--seeds=2"]
    assert expand_aliases(argv, ALIASES) == [
        "prog", "--workdir=w", "--config.weights=a.npz", "--config.from_seed=3",
        "--config.tau=0.1", "--seeds=2"]
    assert expand_aliases(argv, {}) == argv
