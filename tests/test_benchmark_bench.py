from experiments.benchmark import bench


def test_paired_times_the_loop_and_both_one_device_sweeps_in_one_process():
    out = bench.measure_paired(steps=2, seeds=2, batch=8, repeats=1, tiny=True)
    rows = {r["mode"]: r for r in out["rows"]}
    assert list(rows) == list(bench.PAIRED)
    for r in rows.values():
        assert (r["models"], r["steps"], r["devices"]) == (2, 2, 1)
        assert r["seconds"] > 0 and r["compile_seconds"] > 0
        assert abs(r["ms_per_model_step"] - 1e3 * r["seconds"] / 4) < 1e-9
