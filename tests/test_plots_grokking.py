"""Core-dynamics figures: per-checkpoint ``[C, n]`` arrays drawn as mean over seeds per epoch."""
import numpy as np
import pytest

from mechjax.plots import grokking as plots

pytestmark = pytest.mark.usefixtures("pyplot")

RNG = np.random.default_rng(1)
EPOCHS = [0, 100, 200, 300]  # checkpoints
N = 3  # seeds


def per_ckpt():
    return RNG.uniform(0, 5, (len(EPOCHS), N))


def mean_lines(ax):
    return [line for line in ax.lines if line.get_linewidth() == 2]


def test_compare_branches_means_over_seeds_with_reference_and_branch(pyplot):
    wd1, wd0 = per_ckpt(), per_ckpt()[2:]
    fig, ax = pyplot.subplots()
    out = plots.compare_branches({"wd1": (EPOCHS, wd1), "wd0": (EPOCHS[2:], wd0)}, "dim", "t",
                                 reference=("ref", 3.0), branch_epoch=200, ax=ax)
    assert out is fig
    a, b = mean_lines(ax)
    np.testing.assert_allclose(a.get_ydata(), wd1.mean(1))
    np.testing.assert_array_equal(b.get_xdata(), EPOCHS[2:])
    np.testing.assert_allclose(b.get_ydata(), wd0.mean(1))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["wd1", "wd0", "ref", "branch"]


def test_interventions_and_accuracy_panels_show_their_series(pyplot):
    full, only, removed = per_ckpt(), per_ckpt(), per_ckpt()
    fig, ax = pyplot.subplots()
    plots.interventions(EPOCHS, full, only, removed, 0.1, [150, None, 250], ax=ax)
    np.testing.assert_allclose([line.get_ydata() for line in mean_lines(ax)],
                               [full.mean(1), only.mean(1), removed.mean(1)])
    grok = [line for line in ax.lines if line.get_linestyle() == ":"][0]
    assert grok.get_xdata()[0] == 200.0  # mean over the seeds that grokked

    eval_epochs = np.arange(0, 400, 50)
    train, test = RNG.uniform(size=(N, 8)), RNG.uniform(size=(N, 8))
    core, r2 = per_ckpt(), RNG.uniform(-3, 1, (len(EPOCHS), N))
    fig = plots.accuracy_and_core(eval_epochs, train, test, EPOCHS, core, r2, [], 200, 8)
    top, mid, bottom = fig.axes
    np.testing.assert_allclose(mean_lines(top)[1].get_ydata(), test.mean(0))
    np.testing.assert_allclose(mean_lines(mid)[0].get_ydata(), core.mean(1))
    np.testing.assert_allclose(mean_lines(bottom)[0].get_ydata(), np.clip(r2, -1, 1).mean(1))
    assert mid.get_ylabel() == "core dimension (of 8)"


def test_eigenvalue_clocks_one_panel_per_epoch_split_on_and_off_circle():
    lam = np.array([[1j, 1.0, 0.2], [np.exp(0.5j), 2.0, 0.0]])  # [n seeds, D]
    kept = np.array([2, 3])  # seed 0's third value is not a fitted direction
    fig = plots.eigenvalue_clocks([10, 20], [lam, lam], [kept, kept], p=7)
    assert len(fig.axes) == 2
    on, off = fig.axes[0].collections
    np.testing.assert_allclose(on.get_offsets(), [[0, 1], [1, 0], [np.cos(0.5), np.sin(0.5)]])
    np.testing.assert_allclose(off.get_offsets(), [[2, 0], [0, 0]])
    assert fig.axes[1].get_title() == "epoch 20: 3/5 on circle"


def test_all_figures_names_every_figure_of_the_experiment():
    stats = {k: {"core_dim": per_ckpt(), "heldout_r2": per_ckpt(), "acc_full": per_ckpt(),
                 "acc_core_only": per_ckpt(), "acc_core_removed": per_ckpt(),
                 "r_nec": per_ckpt(), "r_suf": per_ckpt(), "n_rotational": per_ckpt(),
                 "weights": np.zeros((len(EPOCHS), N, 8)),
                 "eigenvalues": np.ones((len(EPOCHS), N, 4), complex),
                 "n_directions": np.full((len(EPOCHS), N), 2)} for k in ("wd1", "wd0")}
    metrics = {"wd1": {"epoch": np.arange(5), "acc/train": RNG.uniform(size=(N, 5)),
                       "acc/test": RNG.uniform(size=(N, 5))}}
    figs = plots.all_figures(7, metrics, stats, {"wd1": EPOCHS, "wd0": EPOCHS}, [100, None, 200],
                             100, (0, 300))
    assert list(figs) == ["accuracy_core_dim", "core_interventions", "eigenvalue_clocks",
                          "core_dim_wd1_vs_wd0", "r_suf_vs_r_nec", "rotational_modes"]
    rot = figs["rotational_modes"].axes[0]
    np.testing.assert_allclose(mean_lines(rot)[1].get_ydata(), stats["wd0"]["n_rotational"].mean(1))
    assert rot.get_legend().get_texts()[2].get_text() == "floor(p/2) + 1"
