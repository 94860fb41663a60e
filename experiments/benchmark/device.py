"""What the benchmark runs on: the platform, the chip, and whether bfloat16 is worth timing there.

bfloat16 matmuls run natively on TPUs and on NVIDIA GPUs from compute capability 8.0 (Ampere;
the H100/H200 are 9.0); older NVIDIA GPUs emulate them, so a bf16 timing there measures the
emulation. XLA's CPU backend computes bfloat16 correctly but without speed-up; it is allowed on
CPU so that a CPU check exercises the bf16 code path that an accelerator will time.
"""
from __future__ import annotations

from typing import Any

BF16_MIN_COMPUTE_CAPABILITY = 8.0


def bf16_supported(platform: str, compute_capability: str | None) -> bool:
    """Whether bfloat16 runs natively (or, on CPU, correctly) on this device."""
    if platform == "gpu" and compute_capability:  # CUDA; ROCm devices report no capability
        try:
            return float(compute_capability) >= BF16_MIN_COMPUTE_CAPABILITY
        except ValueError:
            return False
    return platform in ("cpu", "tpu", "gpu")


def describe() -> dict[str, Any]:
    """The default device: ``platform``, ``kind``, ``count``, ``compute_capability`` (CUDA only)
    and ``bf16``. Initializes JAX's backend (on a GPU JAX then takes its share of memory), so
    call it inside the process that measures, not in a parent that starts others."""
    import jax
    dev = jax.devices()[0]
    cc = getattr(dev, "compute_capability", None)
    return {"platform": dev.platform, "kind": dev.device_kind, "count": jax.device_count(),
            "compute_capability": None if cc is None else str(cc),
            "bf16": bf16_supported(dev.platform, None if cc is None else str(cc)),
            "jax": jax.__version__}
