"""The throughput part's plan and the device description (the measurements themselves run in
tests/test_benchmark_accelerator.py)."""
from experiments.benchmark import device, throughput


def test_plan_runs_the_batched_curve_first_and_loops_one_seed_once():
    assert throughput.plan((1, 16), ("float32", "bfloat16")) == [
        ("vmap", "float32", 1), ("vmap", "float32", 16),
        ("vmap", "bfloat16", 1), ("vmap", "bfloat16", 16),
        ("map", "float32", 16), ("map", "bfloat16", 16)]
    assert throughput.FULL.sizes == (1, 16, 64, 256)


def test_bf16_only_where_it_runs_natively():
    assert device.bf16_supported("gpu", "9.0")       # H100 / H200
    assert device.bf16_supported("gpu", "8.0")       # A100
    assert not device.bf16_supported("gpu", "7.5")   # T4: emulated
    assert not device.bf16_supported("gpu", "n/a")
    assert device.bf16_supported("gpu", None)        # ROCm reports no capability
    assert device.bf16_supported("tpu", None)
    assert device.bf16_supported("cpu", None)        # correct, not fast: the CPU check runs it
    assert not device.bf16_supported("metal", None)


def test_describe_names_this_device():
    info = device.describe()
    assert info["platform"] == "cpu" and info["count"] >= 1 and info["bf16"] is True
    assert info["compute_capability"] is None
