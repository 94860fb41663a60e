"""experiments.icl_minimal: the tiny config end to end, and one-line errors for bad values."""
import pytest

from experiments.icl_minimal import run
from experiments.icl_minimal.configs import tiny
from mechjax.models.config import ConfigError


def test_tiny_config_context_label_shortcut_at_b_equals_n_in_every_seed(tmp_path):
    """The tiny config sweeps B over {0, N} with N = 4. At B = N every context item is of the
    query's class, so copying any context label answers: in every seed the B = N runs score
    higher on the ICL probe (a context label read at random gets 0.5 there, no item matching
    needed) and lower on the IWL probe than the B = 0 runs. This checks that shortcut and the
    sweep's plumbing, not that an induction head forms (docs/icl_minimal.md)."""
    summary = run.run(tiny.get_config(), str(tmp_path / "w"))
    assert summary["B/traces"] == 1  # the seeds x B grid is one compiled program
    assert (tmp_path / "w" / "figures" / "B.png").exists()
    assert summary["theory/n_runs"] == 4
    assert (tmp_path / "w" / "figures" / "theory_boundary.png").exists()
    for icl_row, iwl_row in zip(summary["B/icl_final"], summary["B/iwl_final"]):
        assert icl_row[1] > icl_row[0] + 0.2 and iwl_row[0] > iwl_row[1] + 0.2


@pytest.mark.parametrize("edit, msg", [
    (lambda c: c.task.update(dict(n_labels=2)), "L=2 < N=4"),
    (lambda c: c.sweeps.B.update(dict(values=(0.0, 5.0))), "B=5.0 > N=4"),
    (lambda c: c.task.update(dict(zipf=-1.0)), "zipf=-1.0"),
    (lambda c: c.task.update(dict(d=0)), "d=0"),
])
def test_bad_values_one_line_errors(tmp_path, edit, msg):
    config = tiny.get_config()
    edit(config)
    with pytest.raises(ConfigError, match=msg) as err:
        run.run(config, str(tmp_path / "w"))
    assert "\n" not in str(err.value)


def test_knob_figure_one_line_per_seed():
    import numpy as np
    from mechjax.plots.icl_minimal import knob_figure
    fig = knob_figure([0, 2, 4], np.random.rand(3, 3), np.random.rand(3, 3), "B")
    assert [len(ax.lines) for ax in fig.axes] == [4, 4]  # 3 seeds + mean per probe


def test_boundary_figure_points_and_predicted_contour():
    import numpy as np
    from mechjax.plots.icl_minimal import boundary_figure
    sb = np.array([0.1, 0.1, 0.9, 0.9, 0.5])
    icl = np.array([0.1, 0.2, 0.9, 0.95, 0.3])
    fig = boundary_figure(sb, icl, ["K", "K", "B", "B", "eps"], threshold=0.7, formed_at=0.75)
    ax = fig.axes[0]
    offsets = [c.get_offsets() for c in ax.collections]
    assert [len(o) for o in offsets] == [2, 2, 1]  # one colour per sweep, every run drawn
    np.testing.assert_allclose(np.concatenate(offsets)[:, 1], icl[[0, 1, 2, 3, 4]])
    np.testing.assert_allclose(np.concatenate(offsets)[:, 0], sb, atol=0.03 * 0.8)
    vertical, horizontal = ax.lines[0].get_xdata(), ax.lines[1].get_ydata()
    assert vertical[0] == 0.7 and horizontal[0] == 0.75


def _planted_arrays(config, names, rule):
    """``{name/icl: [seeds, values, 1]}`` whose final ICL probe is 1 where ``rule(sb, sweep)``."""
    import numpy as np
    shapes = {n: (2, len(config.sweeps[n]["values"]), 1) for n in names}
    zeros = {f"{n}/icl": np.zeros(s) for n, s in shapes.items()}
    pts = run.theory_points(config, names, zeros, 100.0)  # run order: name, value, seed
    formed = rule(pts["sb"], pts["sweep"]).astype(float)
    out, i = {}, 0
    for n, (seeds, values, _) in shapes.items():
        block = formed[i: i + seeds * values].reshape(values, seeds).T
        out[f"{n}/icl"] = block[..., None]
        i += seeds * values
    return out


def test_held_out_separation_fits_on_the_other_sweeps_only():
    """A rule the map states exactly (formed iff s b >= c at min_count 100) is recovered out of
    sample in every sweep the others bracket; flipping one sweep's outcomes leaves its fitted
    threshold unchanged (it was chosen without them) and turns its accuracy to 1 - before."""
    import numpy as np
    from experiments.icl_minimal.configs import cpu
    from experiments.icl_minimal.schema import SCHEMA
    config = SCHEMA.validate(cpu.get_config())
    names = ["K", "B", "eps", "alpha"]
    sb = run.theory_points(config, names, _planted_arrays(config, names, lambda s, w: s > 0),
                           100.0)["sb"]
    c0 = float(np.median(np.unique(sb)))
    rule = lambda s, w: s >= c0
    out = run.held_out_separation(config, names, _planted_arrays(config, names, rule))
    assert out["theory/held_out_accuracy"] > out["theory/held_out_majority_baseline"]
    per = out["theory/held_out_per_sweep"]
    flipped = lambda s, w: (s >= c0) ^ (w == 0)  # sweep K's outcomes inverted
    again = run.held_out_separation(config, names, _planted_arrays(config, names, flipped))
    before, after = per["K"], again["theory/held_out_per_sweep"]["K"]
    assert (after["min_count"], after["threshold"]) == (before["min_count"], before["threshold"])
    assert after["accuracy"] == pytest.approx(1 - before["accuracy"])
