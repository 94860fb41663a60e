"""Assign-and-Add figures draw the curves, maps and histograms they are given."""
import numpy as np
import pytest

from mechjax.plots import assign_add as plots

pytestmark = pytest.mark.usefixtures("pyplot")

STEPS = np.arange(0, 100, 10)
RNG = np.random.default_rng(0)


def curves(n_seeds=3):
    return RNG.uniform(0, 1, (n_seeds, STEPS.size))


def mean_lines(ax):
    return [line for line in ax.lines if line.get_linewidth() == 2]


def test_accuracy_per_pool_one_panel_per_sequence_kind_with_pool_means():
    pools = {"0var_train": curves(), "2var_heldout": curves(), "extra": curves()}
    phases = {"phase2": np.array([20.0, 40.0, np.nan])}
    fig = plots.accuracy_per_pool(STEPS, pools, phases)
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert titles == ["0-var accuracy (3 seeds)", "2-var accuracy (3 seeds)",
                      "other accuracy (3 seeds)"]
    for ax, name in zip(fig.axes, pools):
        (line,) = mean_lines(ax)
        np.testing.assert_allclose(line.get_ydata(), pools[name].mean(0))
        phase = [line for line in ax.lines if line.get_linestyle() == "--"][0]
        assert phase.get_xdata()[0] == 30.0 and "(2/3 seeds)" in phase.get_label()


def test_progress_measures_and_qk2_gradient_one_panel_per_measure():
    measures = {"a": curves(), "b": curves(), "identity": curves()}
    fig = plots.progress_measures(STEPS, measures)
    shown = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in shown] == ["a", "b", "identity"]
    for ax, values in zip(shown, measures.values()):
        np.testing.assert_allclose(mean_lines(ax)[0].get_ydata(), values.mean(0))
        assert len(ax.lines) == 1 + 3  # mean and every seed
    fig = plots.qk2_gradient(STEPS, measures)
    assert fig.axes[2].get_title() == plots.QK2_TITLES["identity"]
    assert any(np.all(np.asarray(line.get_ydata()) == 0.0) for line in fig.axes[0].lines)  # zero line


def test_phase_closeup_aligns_each_seed_at_its_phase_step():
    values = curves()
    fig = plots.phase_closeup(STEPS, {"acc": values}, np.array([30.0, np.nan, 50.0]), 20.0, "p2")
    ax = fig.axes[0]
    seeds = [line for line in ax.lines if line.get_marker() == "."]
    assert len(seeds) == 2  # the seed that never reached the phase is left out
    np.testing.assert_array_equal(seeds[0].get_xdata(), [-20, -10, 0, 10, 20])
    np.testing.assert_array_equal(seeds[0].get_ydata(), values[0, 1:6])
    np.testing.assert_array_equal(seeds[1].get_ydata(), values[2, 3:8])
    assert fig.get_suptitle() == "p2: 2/3 seeds"


def test_qk_heatmaps_attention_and_fourier_show_their_arrays():
    qk1, qk2 = RNG.normal(size=(16, 16)), RNG.normal(size=(12, 12))
    fig = plots.qk_heatmaps(qk1, qk2, title="seed 0")
    heat = [ax for ax in fig.axes if ax.images]
    np.testing.assert_array_equal(heat[0].images[0].get_array(), qk1)
    np.testing.assert_array_equal(heat[1].images[0].get_array(), qk2)
    assert heat[1].images[0].get_clim() == (-np.abs(qk2).max(), np.abs(qk2).max())

    tokens = [f"t{i}" for i in range(4)]
    p1, p2 = RNG.uniform(size=(4, 4)), RNG.uniform(size=(4, 4))
    fig = plots.attention_patterns(tokens, p1, p2)
    heat = [ax for ax in fig.axes if ax.get_xlabel() == "key"]
    np.testing.assert_array_equal(heat[1].images[0].get_array(), p2)
    assert [t.get_text() for t in heat[0].get_xticklabels()] == tokens

    neuron, fitted, evr = RNG.normal(size=(5, 5)), RNG.normal(size=(5, 5)), np.array([0.1, 0.7])
    fig = plots.fourier_neuron(neuron, fitted, 2, 0.7, evr)
    maps = [ax for ax in fig.axes if ax.images]
    np.testing.assert_allclose(maps[0].images[0].get_array(), neuron - neuron.mean())
    np.testing.assert_array_equal(maps[1].images[0].get_array(), fitted)
    bars = [ax for ax in fig.axes if ax.patches][0].patches
    np.testing.assert_array_equal([b.get_height() for b in bars], evr)


def test_cosine_histograms_count_every_value(pyplot):
    matched, mismatched = RNG.uniform(0.5, 1, 40), RNG.uniform(-1, 1, 25)
    fig, ax = pyplot.subplots()
    assert plots.cosine_histograms(matched, mismatched, ax=ax) is fig
    heights = np.array([b.get_height() for b in ax.patches]).reshape(2, 80)
    np.testing.assert_array_equal(heights[0], np.histogram(matched, np.linspace(-1, 1, 81))[0])
    assert heights[1].sum() == 25
    assert ax.get_legend().get_texts()[0].get_text() == f"matched (mean {matched.mean():.3f})"


def test_sweep_curve_draws_mean_every_seed_and_the_crossing(pyplot):
    xs, acc = np.array([0.1, 0.2, 0.4]), np.array([[0.1, 0.6, 1.0], [0.3, 0.8, 1.0]])
    fig, ax = pyplot.subplots()
    plots.sweep_curve(xs, acc, 0.9, np.array([0.3, 0.35]), 0.32, "f", "acc", log_x=True, ax=ax)
    np.testing.assert_allclose(mean_lines(ax)[0].get_ydata(), acc.mean(0))
    dots = [line for line in ax.lines if line.get_marker() == "."]
    np.testing.assert_array_equal(dots[1].get_ydata(), acc[1])
    crossing = [line for line in ax.lines if line.get_color() == "tab:red"]
    assert crossing[0].get_xdata()[0] == 0.32 and ax.get_xscale() == "log"


def test_all_figures_one_per_file_stem_with_the_example_seed_in_its_titles():
    pools = ("0var_train", "0var_heldout", "1var_train", "1var_heldout", "1var_restricted",
             "2var_train", "2var_heldout", "2var_one_misplaced", "2var_two_misplaced")
    m = {f"acc/{p}": curves() for p in pools}
    m.update({f"progress/{k}": curves() for k in ("qk2_diagonal", "attn2_eq_values",
                                                  "probe_accuracy")})
    m["qk2grad/identity_cos"] = curves()
    phase_at = {p: np.array([20.0, np.nan, 50.0]) for p in ("phase1", "phase2", "phase3")}
    final = {"cos_matched": RNG.uniform(size=(3, 8)), "cos_mismatched": RNG.uniform(size=(3, 8)),
             "qk1": RNG.normal(size=(3, 16, 16)), "qk2": RNG.normal(size=(3, 12, 12))}
    views = {"attention": [RNG.uniform(size=(4, 4))] * 2, "neuron": 5,
             "neuron_map": RNG.normal(size=(10, 10)), "neuron_fit": RNG.normal(size=(10, 10)),
             "k": 2, "evr": 0.7, "evr_per_k": RNG.uniform(size=6)}
    done3 = np.array([True, False, True])
    figs = plots.all_figures(STEPS, m, phase_at, 20, final, done3,
                             {"index": 2, "seed": 7, "tokens": list("a=1;"), "views": views})
    assert sorted(figs) == ["accuracy_per_pool", "attention_patterns", "cosine_histograms",
                            "fourier_best_neuron", "phase2_closeup", "phase3_closeup",
                            "progress_measures", "qk2_gradient", "qk_heatmaps"]
    assert "2 seeds that completed phase 3" in figs["cosine_histograms"].axes[0].get_title()
    assert figs["fourier_best_neuron"].axes[0].get_title().endswith("seed 7, neuron 5")
    np.testing.assert_array_equal(figs["qk_heatmaps"].axes[0].images[0].get_array(),
                                  final["qk1"][2])  # the example seed's map
