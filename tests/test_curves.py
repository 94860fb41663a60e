"""first_crossing: a measured point, linear or log interpolation, and the value for "never"."""
import numpy as np
import pytest

from mechjax.analysis.curves import first_crossing


def test_no_interpolation_gives_the_first_measured_point_and_skips_nan():
    steps = np.array([10, 20, 30, 40])
    vals = np.array([[0.1, 0.99, 0.5, 1.0],     # first at 20 (later dip is ignored)
                     [np.nan, np.nan, 0.995, 1.0],   # NaN never counts
                     [0.1, 0.2, 0.3, 0.4]])     # never
    out = first_crossing(steps, vals, 0.99)
    np.testing.assert_array_equal(out, [20.0, 30.0, np.nan])
    np.testing.assert_array_equal(first_crossing(steps, vals, 0.99, never=np.inf),
                                  [20.0, 30.0, np.inf])


def test_linear_interpolation_places_the_threshold_on_the_chord():
    t = np.array([0.0, 10.0, 20.0, 30.0])
    x = np.array([[0.0, 0.2, 0.6, 1.0],   # 0.5 is 3/4 of the way from 0.2 to 0.6: t = 17.5
                  [0.7, 0.8, 0.9, 1.0],   # starts above: t[0]
                  [0.0, 0.1, 0.2, 0.3]])  # never
    out = first_crossing(t, x, 0.5, interpolate="linear", never=np.inf)
    np.testing.assert_allclose(out, [17.5, 0.0, np.inf])
    # A point that reaches the threshold exactly is returned exactly.
    assert first_crossing(t, [0.0, 0.5, 1.0, 1.0], 0.5, interpolate="linear") == 10.0


def test_log_interpolation_works_in_log_x():
    xs = np.array([0.01, 0.1, 1.0])
    out = first_crossing(xs, np.array([0.8, 1.0, 1.0]), 0.9, interpolate="log")
    assert out == pytest.approx(np.sqrt(0.01 * 0.1))  # halfway in log x
    # Starting above returns xs[0]; a curve with NaN before the hit returns the hit point.
    assert first_crossing(xs, [0.95, 1.0, 1.0], 0.9, interpolate="log") == pytest.approx(0.01)
    assert first_crossing(xs, [np.nan, 0.95, 1.0], 0.9, interpolate="log") == pytest.approx(0.1)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="points but x"):
        first_crossing([1, 2, 3], np.zeros((2, 4)), 0.5)
    with pytest.raises(ValueError, match="interpolate='cubic'"):
        first_crossing([1, 2], [0.0, 1.0], 0.5, interpolate="cubic")
    with pytest.raises(ValueError, match="x > 0"):
        first_crossing([0.0, 1.0], [0.0, 1.0], 0.5, interpolate="log")


def test_late_change_is_zero_on_a_plateau_and_the_rise_on_a_ramp():
    from mechjax.analysis.curves import late_change
    steps = np.arange(250, 8001, 250, dtype=float)
    plateau = np.minimum(steps / 2000.0, 1.0)  # flat after step 2000
    ramp = steps / 8000.0                      # still rising at the same rate
    change, start = late_change(steps, np.stack([plateau, ramp]), fraction=0.25)
    assert steps[start] == 6000.0
    np.testing.assert_allclose(change, [0.0, 2000.0 / 8000.0])
    with pytest.raises(ValueError, match="fraction=0"):
        late_change(steps, ramp, fraction=0.0)
