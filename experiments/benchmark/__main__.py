"""python -m experiments.benchmark [--steps=40] [--seeds=16] [--batch=512] [--devices=1,2]
    [--torch=auto|yes|no] [--torch_python=PATH]

Every measurement runs in its own subprocess (so each can choose its number of host devices
before JAX starts) and the ratios are printed side by side at the end. Processes differ by
+-5-15% on shared cores, so the sequential loop and the two one-device sweeps are also timed in
one process with their calls alternated (``bench.measure_paired``), printed last.
"""
from absl import app, flags

from experiments.benchmark import bench

_STEPS = flags.DEFINE_integer("steps", 40, "timed training steps per model", lower_bound=1)
_SEEDS = flags.DEFINE_integer("seeds", 16, "models in the sweep", lower_bound=1)
_BATCH = flags.DEFINE_integer("batch", 512, "sequences per step", lower_bound=1)
_DEVICES = flags.DEFINE_list("devices", ["1", "2"], "host device counts to try for the sweep")
_TORCH = flags.DEFINE_enum("torch", "auto", ["auto", "yes", "no"],
                           "also time TransformerLens (auto: when torch and transformer_lens import)")
_TORCH_PYTHON = flags.DEFINE_string(
    "torch_python", None, "a Python interpreter with torch and transformer_lens (another venv) "
    "for the TransformerLens measurement")
_REPEATS = flags.DEFINE_integer("repeats", 3, "timed repetitions (best is reported)", lower_bound=1)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    devices = []
    for d in _DEVICES.value:
        if not d.isdigit() or int(d) < 1:
            raise app.UsageError(f"--devices={','.join(_DEVICES.value)}: each entry must be a "
                                 "positive integer")
        devices.append(int(d))
    bench.main(steps=_STEPS.value, seeds=_SEEDS.value, batch=_BATCH.value, devices=devices,
               torch=_TORCH.value, repeats=_REPEATS.value, torch_python=_TORCH_PYTHON.value)


if __name__ == "__main__":
    app.run(main)
