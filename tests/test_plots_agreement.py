"""Agreement figures draw on the Axes they are given and return its Figure."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mechjax.plots import agreement  # noqa: E402


def test_each_figure_draws_on_the_given_axes():
    rng = np.random.default_rng(0)
    labels = np.arange(40) % 2
    fig, axes = plt.subplots(1, 4)
    aucs = {m: rng.uniform(size=(3, 4)) for m in ("keep", "remove", "flip")}
    assert agreement.auc_vs_depth(aucs, np.ones(3), ax=axes[0]) is fig
    assert len(axes[0].get_lines()) >= 4 * 4  # 3 seeds + the mean, per condition
    z = rng.normal(size=40)
    assert agreement.core_vs_margin(z, 2 * z + 1, labels, ax=axes[1]) is fig
    assert agreement.margin_boxplots({"base": z, "removed": z, "flipped": -z}, labels,
                                     ax=axes[2]) is fig
    assert len(axes[2].get_xticklabels()) == 3
    assert agreement.generation_text({"clean": "The keys are here.",
                                      "pushed": "The keys is here."}, ax=axes[3]) is fig
    assert "pushed" in axes[3].texts[0].get_text()
    plt.close(fig)
