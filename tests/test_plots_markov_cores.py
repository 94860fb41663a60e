"""The Markov-cores figures: one per file stem, each showing the numbers it is given."""
import numpy as np
import pytest

from mechjax.plots import markov_cores as figures

pytestmark = pytest.mark.usefixtures("pyplot")


def test_all_figures_show_the_tails_matrices_and_the_summary_numbers():
    rng = np.random.default_rng(0)
    seeds, steps = [3, 4, 5], np.arange(10, 60, 10)
    acc = {"train": rng.uniform(size=(3, 5)), "test": rng.uniform(size=(3, 5))}
    mats = {"cosine": rng.uniform(-1, 1, (3, 3)), "overlap": rng.uniform(size=(3, 3)),
            "cca": rng.uniform(size=(3, 3)),
            "eigenvalues": [np.array([0.5 + 0.2j, 0.5 - 0.2j])] * 3,
            "acc": {"full": np.array([0.7, 0.8, 0.9]), "core_only": np.array([0.6, 0.7, 0.8]),
                    "core_removed": np.array([0.2, 0.3, 0.25])}}
    summary = {"weight_cosine/mean_offdiag": 0.123, "overlap/mean_offdiag": 0.456,
               "overlap/chance": 0.25, "cca/mean_offdiag": 0.789}
    figs = figures.all_figures(steps, acc, mats, summary, seeds, 0.75, 0.25,
                               np.array([0.75 + 0.25j, 0.5]))
    assert list(figs) == ["accuracy", "weight_cosine", "necessity_sufficiency",
                          "projector_overlap", "cca", "eigenvalues"]
    assert "0.123" in figs["weight_cosine"].axes[0].get_title()
    assert "0.456" in figs["projector_overlap"].axes[0].get_title()
    assert "0.789" in figs["cca"].axes[0].get_title()
    bars = figs["necessity_sufficiency"].axes[0].patches
    np.testing.assert_allclose([b.get_height() for b in bars], [0.75, 0.8, 0.7, 0.25, 0.25])
