"""How seeds share a device, for training sweeps (per backend) and for analyses."""
import re

import jax
import pytest

from mechjax.sweeps.vectorize import resolve_analysis_vectorize, resolve_vectorize


def test_cpu_training_loops_analyses_vmap_and_explicit_choices_are_kept():
    assert jax.default_backend() == "cpu"
    assert resolve_vectorize("auto") == "map" and resolve_analysis_vectorize("auto") == "vmap"
    assert resolve_vectorize("vmap") == "vmap" and resolve_analysis_vectorize("loop") == "loop"


@pytest.mark.parametrize("fn, bad, allowed", [
    (resolve_vectorize, "loop", "('auto', 'vmap', 'map')"),
    (resolve_analysis_vectorize, "map", "('auto', 'vmap', 'loop')"),
])
def test_a_mode_of_the_other_rule_is_refused(fn, bad, allowed):
    with pytest.raises(ValueError, match=re.escape(f"vectorize='{bad}': allowed {allowed}")):
        fn(bad)
