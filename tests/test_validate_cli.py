"""Each reader's CLI on a broken file: a non-zero exit, one line naming the file and what is
wrong, no traceback, and nothing written (one subprocess per reader)."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import PYTHON, REPO, fast_compile_env
from mechjax.interop import save_gpt2
from mechjax.interop.gpt2 import gpt2_model_config
from mechjax.models.transformer import param_shapes
from mechjax.tasks import assign_add as aa
from mechjax.interop.weights import save_npz


def random_params(cfg, nan_in=None):
    rng = np.random.default_rng(0)
    params = {k: rng.normal(size=s).astype(np.float32) for k, s in param_shapes(cfg).items()}
    if nan_in is not None:
        params[nan_in].reshape(-1)[3] = np.nan
    return params


def files_and_times(folder):
    return {os.path.join(d, n): os.stat(os.path.join(d, n)).st_mtime_ns
            for d, _, names in os.walk(folder) for n in names}


def refused(args, message):
    """Run ``python -m args``; check the exit, the one line and the absence of a traceback."""
    proc = subprocess.run([PYTHON, "-m", *args], cwd=REPO, env=fast_compile_env(),
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if message in line]
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1 and proc.stderr.strip().endswith(lines[0].strip()), proc.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("broken", ["nan_weight", "heldout_without_key"])
def test_evaluate_refuses_a_nan_weight_and_a_heldout_file_without_its_key(broken, tmp_path):
    cfg = aa.model_config()
    weights, heldout = tmp_path / "w.npz", tmp_path / "heldout_pairs.json"
    save_npz(random_params(cfg, "blocks.1.attn.W_V" if broken == "nan_weight" else None),
             str(weights))
    heldout.write_text(json.dumps({"modulus": 59} if broken == "heldout_without_key"
                                  else {"heldout_pairs": [[1, 2], [3, 4]]}))
    message = ("tensor 'blocks.1.attn.W_V' has 1 of" if broken == "nan_weight"
               else "key 'heldout_pairs' is missing")
    line = refused(["experiments.assign_add.evaluate", f"--weights={weights}",
                    f"--heldout={heldout}", f"--workdir={tmp_path / 'out'}"], message)
    assert ("w.npz" if broken == "nan_weight" else "heldout_pairs.json") in line
    assert not (tmp_path / "out").exists()


def test_ace_agreement_refuses_a_gpt2_folder_with_a_nan_weight(tmp_path):
    cfg = gpt2_model_config(n_layers=1, d_model=8, n_heads=2, d_vocab=11, n_ctx=4)
    save_gpt2(str(tmp_path / "gpt2"), cfg, random_params(cfg, "blocks.0.mlp.W_in"))
    line = refused(["experiments.ace_agreement", "--config=experiments/ace_agreement/configs/"
                    "tiny.py", "--config.n_seeds=0", f"--config.gpt2_paths={tmp_path / 'gpt2'}",
                    f"--workdir={tmp_path / 'out'}"], "tensor 'h.0.mlp.c_fc.weight' has 1 of")
    assert "model.safetensors" in line and not (tmp_path / "out").exists()


def test_progress_refuses_a_run_whose_model_config_lost_a_key(tmp_path, quickstart_run):
    workdir = str(tmp_path / "run")
    shutil.copytree(quickstart_run, workdir, ignore=shutil.ignore_patterns("checkpoints"))
    with open(os.path.join(workdir, "config.json")) as f:
        config = json.load(f)
    config["phases"] = {"threshold": 0.9, "phase1": "a", "phase2": "b", "phase3": "c"}
    with open(os.path.join(workdir, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(workdir, "model_config.json")) as f:
        model = json.load(f)
    del model["d_model"]
    with open(os.path.join(workdir, "model_config.json"), "w") as f:
        json.dump(model, f)
    before = files_and_times(workdir)
    line = refused(["experiments.assign_add.progress", f"--workdir={workdir}"],
                   "missing keys ['d_model']")
    assert "model_config.json" in line and files_and_times(workdir) == before


def test_a_resume_refuses_a_damaged_checkpoint_before_writing(tmp_path, quickstart_run):
    workdir = str(tmp_path / "run")
    shutil.copytree(quickstart_run, workdir)
    latest = max(int(n) for n in os.listdir(os.path.join(workdir, "checkpoints")) if n.isdigit())
    data = os.path.join(workdir, "checkpoints", str(latest), "default", "ocdbt.process_0", "d")
    biggest = max((os.path.join(data, n) for n in os.listdir(data)), key=os.path.getsize)
    with open(biggest, "r+b") as f:  # one flipped byte in the middle of the array data
        f.seek(os.path.getsize(biggest) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    before = files_and_times(workdir)
    line = refused(["experiments.quickstart", "--config=experiments/quickstart/configs/tiny.py",
                    "--config.n_seeds=5", f"--workdir={workdir}"], "is damaged")
    assert f"checkpoints/{latest}" in line and os.path.basename(biggest) in line
    assert files_and_times(workdir) == before
