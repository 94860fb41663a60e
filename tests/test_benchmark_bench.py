from experiments.benchmark import bench


def test_paired_alternates_the_three_forms_and_keeps_each_ones_best(monkeypatch):
    # The point of the paired measurement: the forms' timed calls interleave (a slow stretch of
    # the machine hits all three), and each form keeps its own fastest call.
    calls, clock = [], [0.0]
    durations = {"sequential": [3.0, 1.0, 2.0], "sweep_vmap": [5.0, 6.0, 4.0],
                 "sweep_map": [2.0, 2.0, 0.5]}

    def fake_runner(mode, steps, seeds, batch, repeats, dtype, tiny):
        def go():
            calls.append(mode)
            clock[0] += durations[mode][sum(c == mode for c in calls) - 1]
        return go, 0.1, seeds

    monkeypatch.setattr(bench, "_runner", fake_runner)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: clock[0])
    out = bench.measure_paired(steps=10, seeds=4, batch=8, repeats=3)
    assert calls == list(bench.PAIRED) * 3
    rows = {r["mode"]: r for r in out["rows"]}
    assert {m: r["seconds"] for m, r in rows.items()} == {"sequential": 1.0, "sweep_vmap": 4.0,
                                                         "sweep_map": 0.5}
    assert rows["sweep_map"]["ms_per_model_step"] == 1e3 * 0.5 / 40


def test_paired_runs_the_real_programs_at_the_tiny_size():
    out = bench.measure_paired(steps=2, seeds=2, batch=8, repeats=1, tiny=True)
    rows = {r["mode"]: r for r in out["rows"]}
    assert list(rows) == list(bench.PAIRED)
    for r in rows.values():
        assert (r["models"], r["steps"], r["devices"]) == (2, 2, 1) and r["seconds"] > 0
