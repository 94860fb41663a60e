"""Benchmark measurements. ``main`` runs each in a subprocess (``python -m
experiments.benchmark.bench MODE JSON``), which prints one JSON line with its timing.

Model: the Assign-and-Add size (2 layers, 1 head, d_model 128, d_mlp 512, no layer-0 MLP, 16
tokens, 74-token vocabulary, 59 outputs), batch 512, AdamW, loss at the last position. Batches are
uniform random tokens drawn inside the compiled step, so the timing is of the model step (the
Assign-and-Add sampler itself is timed by its own task tests, not here).
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import time

MODES = ("single_full", "single_fast", "sequential", "sweep_vmap", "sweep_map",
         "transformer_lens", "paired")


TINY_MODEL = {"d_model": 16, "d_mlp": 32}  # --tiny: the same architecture, seconds on a CPU


def _task(batch: int):
    import jax
    from mechjax.tasks.base import Task

    def sample(key, task_params):
        k1, k2 = jax.random.split(key)
        return {"tokens": jax.random.randint(k1, (batch, 16), 0, 74),
                "labels": jax.random.randint(k2, (batch,), 0, 59)}

    return Task("random_tokens", sample, {}, readout=-1, seq_len=16, vocab_size=74, vocab_out=59)


def _model_cfg(tiny: bool = False):
    from mechjax.models.config import ModelConfig
    widths = TINY_MODEL if tiny else {"d_model": 128, "d_mlp": 512}
    return ModelConfig(n_layers=2, n_heads=1, d_vocab=74, d_vocab_out=59, n_ctx=16,
                       mlp_layers=(False, True), **widths)


def _best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _runner(mode: str, steps: int, seeds: int, batch: int, repeats: int,
            dtype: str = "float32", tiny: bool = False):
    """``(go, compile_seconds, n_models)`` for ``mode``: ``go()`` trains every model of the
    mode ``steps`` steps (compiled and warmed up first). Each call continues from the state the
    previous one returned, as training does, so no copy or re-initialization is timed."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec
    from mechjax.training.compile_options import jit_train
    from mechjax.sweeps.sweep import SEED_AXIS, seed_mesh, sweep_program
    from mechjax.training.train import TrainConfig, make_train

    fast = mode != "single_full"
    # enough steps that every timed call trains (steps past train_cfg.steps would be masked)
    tr = make_train(_task(batch), _model_cfg(tiny),
                    TrainConfig(steps=steps * (repeats + 1), eval_every=steps,
                                fast_readout=fast, compute_dtype=dtype))
    hp = tr.default_hparams(lr=1e-3, weight_decay=0.02)
    assert tr.use_fastpath == fast
    if mode in ("single_full", "single_fast", "sequential"):
        init = jax.jit(tr.init)
        run = jit_train(lambda s, h: tr.run(s, h, 1)[0], tr)
        states = [init(jax.random.PRNGKey(i), hp) for i in range(seeds if mode == "sequential"
                                                                 else 1)]
        t0 = time.perf_counter()
        compiled = run.lower(states[0], hp).compile()
        compile_seconds = time.perf_counter() - t0

        def go():
            for i, s in enumerate(states):
                states[i] = jax.block_until_ready(compiled(s, hp))

        n_models = len(states)
    else:
        mesh = seed_mesh()
        n_dev = mesh.devices.size
        n_pad = -(-seeds // n_dev) * n_dev
        sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))
        keys = jax.device_put(np.stack([np.asarray(jax.random.PRNGKey(i)) for i in range(n_pad)]),
                              sharding)
        init = jax.jit(jax.vmap(jax.vmap(tr.init, (None, 0)), (0, None)),
                       out_shardings=sharding)
        grid = {k: v[None] for k, v in hp.items()}
        program = sweep_program(tr, 1, mesh, vectorize=mode.split("_")[1])
        state = [init(keys, grid)]
        t0 = time.perf_counter()
        total = tr.total_steps()
        compiled = program.lower(state[0], grid, total).compile()
        compile_seconds = time.perf_counter() - t0

        def go():  # the program donates its input state and returns the next one
            state[0] = jax.block_until_ready(compiled(state[0], grid, total))[0]

        n_models = n_pad
    go()  # warm-up
    return go, compile_seconds, n_models


def _row(mode: str, compile_seconds: float, seconds: float, n_models: int, steps: int,
         dtype: str) -> dict:
    import jax
    dev = jax.devices()[0]
    return {"mode": mode, "devices": jax.device_count(), "models": n_models, "steps": steps,
            "dtype": dtype, "platform": dev.platform, "device_kind": dev.device_kind,
            "compile_seconds": compile_seconds, "seconds": seconds,
            "ms_per_model_step": 1e3 * seconds / (n_models * steps),
            "model_steps_per_s": n_models * steps / seconds}


def measure_jax(mode: str, steps: int, seeds: int, batch: int, repeats: int,
                dtype: str = "float32", tiny: bool = False) -> dict:
    """Best of ``repeats`` timed calls of ``steps`` training steps of ``mode``'s models
    (compile time reported apart). ``dtype``: the compute dtype."""
    go, compile_seconds, n_models = _runner(mode, steps, seeds, batch, repeats, dtype, tiny)
    return _row(mode, compile_seconds, _best_time(go, repeats), n_models, steps, dtype)


PAIRED = ("sequential", "sweep_vmap", "sweep_map")


def measure_paired(steps: int, seeds: int, batch: int, repeats: int, dtype: str = "float32",
                   tiny: bool = False) -> dict:
    """The sequential loop and the two one-device sweeps in one process, their timed calls
    alternated (best of ``repeats`` each): ratios between them that a separate process per
    measurement (+-5-15% on shared cores) cannot give. ``{"mode": "paired", "rows": [...]}``."""
    runners = {m: _runner(m, steps, seeds, batch, repeats, dtype, tiny) for m in PAIRED}
    best = dict.fromkeys(PAIRED, float("inf"))
    for _ in range(repeats):
        for m, (go, _, _) in runners.items():
            best[m] = min(best[m], _best_time(go, 1))
    return {"mode": "paired", "rows": [_row(m, runners[m][1], best[m], runners[m][2], steps,
                                            dtype) for m in PAIRED]}


def measure_transformer_lens(steps: int, batch: int, repeats: int, tiny: bool = False,
                             device: str = "auto") -> dict:
    """The same model and step in TransformerLens / PyTorch eager (its layer-0 MLP zeroed and
    frozen, as in the Assign-and-Add authors' checkpoints, since TL has no per-layer switch).
    ``device``: ``auto`` is CUDA when torch sees a GPU, else the CPU."""
    import tempfile

    import jax
    import torch

    from mechjax.interop import tl_export
    from mechjax.models.transformer import init_params

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(os.cpu_count() or 1)
    cfg = _model_cfg(tiny)
    # the model as TransformerLens builds it from mechjax's export: a HookedTransformer on 3.x,
    # a TransformerBridge on 4.x (the installed version's own forward and backward are timed)
    with tempfile.TemporaryDirectory() as folder:
        tl_export.write(init_params(jax.random.key(0), cfg), cfg, folder)
        model = tl_export.load(folder).to(device).train()
    mlp0 = model.blocks[0].mlp
    with torch.no_grad():
        for p in mlp0.parameters():
            p.zero_()
            p.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3,
                            weight_decay=0.02)
    # CUDA runs asynchronously: wait for the device before reading the clock
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def go():
        for _ in range(steps):
            tokens = torch.randint(0, 74, (batch, 16), device=device)
            labels = torch.randint(0, 59, (batch,), device=device)
            loss = torch.nn.functional.cross_entropy(model(tokens)[:, -1], labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sync()

    go()
    seconds = _best_time(go, repeats)
    return {"mode": "transformer_lens", "devices": 1, "models": 1, "steps": steps,
            "dtype": "float32", "platform": device,
            "device_kind": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "seconds": seconds, "ms_per_model_step": 1e3 * seconds / steps,
            "model_steps_per_s": steps / seconds, "torch": torch.__version__,
            "transformer_lens": importlib.metadata.version("transformer-lens"),
            "tl_model": type(model).__name__}


def _subprocess(mode: str, devices: int, args: dict, python: str | None = None) -> dict | None:
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                        f" --xla_force_host_platform_device_count={devices}").strip()
    proc = subprocess.run([python or sys.executable, "-m", "experiments.benchmark.bench", mode,
                           json.dumps(args)], env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            return json.loads(line)
    print(f"[{mode}] failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
    return None


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
        import transformer_lens  # noqa: F401
        return True
    except Exception:
        return False


def main(steps: int, seeds: int, batch: int, devices: list[int], torch: str,
         repeats: int, torch_python: str | None = None) -> list[dict]:
    args = {"steps": steps, "seeds": seeds, "batch": batch, "repeats": repeats}
    rows = [_subprocess("single_full", 1, args), _subprocess("single_fast", 1, args),
            _subprocess("sequential", 1, args)]
    rows += [_subprocess(f"sweep_{how}", d, args) for how in ("vmap", "map") for d in devices]
    if torch_python or torch == "yes" or (torch == "auto" and _torch_available()):
        rows.append(_subprocess("transformer_lens", 1, args, torch_python))
    rows = [r for r in rows if r]
    by = {(r["mode"], r["devices"]): r for r in rows}
    seq = by.get(("sequential", 1))
    tl = by.get(("transformer_lens", 1))
    print(f"\nAssign-and-Add-size model, batch {batch}, {steps} steps, {seeds} seeds, "
          f"{os.cpu_count()} CPU cores")
    print(f"{'measurement':<34}{'ms/model-step':>15}{'model-steps/s':>15}{'vs sequential':>15}"
          f"{'vs TL':>8}")
    for r in rows:
        name = f"{r['mode']} ({r['models']} models, {r['devices']} dev)"
        vs_seq = seq["ms_per_model_step"] / r["ms_per_model_step"] if seq else float("nan")
        vs_tl = tl["ms_per_model_step"] / r["ms_per_model_step"] if tl else float("nan")
        print(f"{name:<34}{r['ms_per_model_step']:>15.2f}{r['model_steps_per_s']:>15.1f}"
              f"{vs_seq:>15.2f}{vs_tl:>8.2f}")
    if seq:
        best = max((r for r in rows if r["mode"].startswith("sweep")), key=lambda r: r["model_steps_per_s"],
                   default=None)
        if best:
            print(f"\nratio b/c (best sweep / sequential loop, per model-step): "
                  f"{seq['ms_per_model_step'] / best['ms_per_model_step']:.2f}")
    if tl:
        fast = by.get(("single_fast", 1))
        print(f"ratio mechjax single seed / TransformerLens per model-step: "
              f"{tl['ms_per_model_step'] / fast['ms_per_model_step']:.2f}")
    paired = _subprocess("paired", 1, args)
    if paired:
        ms = {r["mode"]: r["ms_per_model_step"] for r in paired["rows"]}
        print(f"one process, 1 dev, timed calls alternated (best of {repeats}), ms/model-step: "
              + ", ".join(f"{m} {ms[m]:.2f}" + ("" if m == "sequential" else
                                               f" ({ms['sequential'] / ms[m]:.2f}x sequential)")
                          for m in PAIRED))
        rows.append(paired)
    return rows


if __name__ == "__main__":
    mode, args = sys.argv[1], json.loads(sys.argv[2])
    if mode not in MODES:
        raise SystemExit(f"mode {mode!r}: allowed {MODES}")
    if mode == "transformer_lens":
        out = measure_transformer_lens(args["steps"], args["batch"], args["repeats"],
                                       args.get("tiny", False))
    elif mode == "paired":
        out = measure_paired(**args)
    else:
        out = measure_jax(mode, **args)
    print(json.dumps(out))
