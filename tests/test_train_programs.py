"""The training programs of the built-in models, pinned: the jaxpr of one evaluation interval over
two seeds (vmapped) for the transformer (plain and with the tabled fast path), the transformer at
an attention rate (both mixings), Reddy's network and the truncated IMIR model, hashed and
compared with ``tests/data/train_jaxprs.json``. A change to a training program, wanted or not,
fails here; after a wanted one, ``python tests/test_train_programs.py --write`` records the new
hashes (the jaxpr is pre-XLA: the same on every CPU, but not across jax versions, so another jax
skips the comparison)."""
from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
import sys

import jax
import pytest

from conftest import run_module_env
from experiments.icl_minimal.run import make_trainer as icl_trainer
from mechjax.analysis.imir.forward import truncated_model
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.models import attention_rate
from mechjax.models.config import ModelConfig
from mechjax.tasks import blocklist as bl
from mechjax.tasks import icl_minimal as icl
from mechjax.tasks import modular
from mechjax.training.train import TrainConfig, Trainer, make_train

PINNED = pathlib.Path(__file__).parent / "data" / "train_jaxprs.json"


def trainers() -> dict[str, Trainer]:
    tc = TrainConfig(steps=4, eval_every=2)
    task = modular.make_task(p=11, train_fraction=0.5)
    one = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_head=8, d_mlp=32, d_vocab=12, n_ctx=3)
    two = ModelConfig(n_layers=2, d_model=16, n_heads=1, d_head=16, d_mlp=32, d_vocab=12, n_ctx=3,
                      mlp_layers=(False, True), normalization="none")
    spec = icl.IclSpec(d=16, n_ctx=8, n_labels=8, k_max=64, k=16, burstiness=2, noise=0.1)
    bspec = bl.BlockListSpec(kind="khop", hops=2, n_common=6, n_rare=3, n_blocks=3)
    frame = ib.make_frame(ib.TokenStructure.from_spec(bspec), bspec.seq_len, n_layers=2,
                          n_heads=2)
    return {
        "plain_1layer": make_train(task, one, tc),
        "tabled_2layer": make_train(task, two, tc),
        "rate_ones": make_train(task, attention_rate.rate_model(two, mixing="ones"), tc),
        "rate_uniform": make_train(task, attention_rate.rate_model(one), tc),
        "icl": icl_trainer(spec, tc, 16, 32, mlp_width=32),
        "truncated": make_train(bl.blocklist_task(bspec, 16, eval_size=32),
                                truncated_model(frame, ib.imir_config(frame)),
                                TrainConfig(steps=4, eval_every=2, optimizer="adam")),
    }


def program_hash(trainer: Trainer) -> str:
    hp = trainer.default_hparams()
    keys = jax.random.split(jax.random.key(0), 2)
    program = lambda k: jax.vmap(lambda key: trainer.run(trainer.init(key, hp), hp, 1))(k)
    return hashlib.sha256(str(jax.make_jaxpr(program)(keys)).encode()).hexdigest()[:16]


def program_hashes() -> dict[str, str]:
    return {name: program_hash(t) for name, t in trainers().items()}


def test_training_programs_are_the_pinned_ones():
    """Hashed in a fresh interpreter, as ``--write`` pins them: in a worker that ran other tests
    first, two programs (Reddy's network, the truncated IMIR model) traced differently once
    (seen under another test order), so the comparison does not depend on what ran before."""
    pinned = json.loads(PINNED.read_text())
    if pinned["jax"] != jax.__version__:
        pytest.skip(f"hashes pinned under jax {pinned['jax']}, this is {jax.__version__}")
    out = subprocess.run([sys.executable, __file__, "--print"], env=run_module_env(),
                         capture_output=True, text=True, timeout=170)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == pinned["hashes"]


def test_rate_model_reads_its_rate_from_the_hyperparameters():
    task = modular.make_task(p=11, train_fraction=0.5)
    cfg = ModelConfig(n_layers=1, d_model=16, n_heads=2, d_head=8, d_mlp=32, d_vocab=12, n_ctx=3)
    trainer = make_train(task, attention_rate.rate_model(cfg), TrainConfig(steps=2))
    params = trainer.init(jax.random.key(0), trainer.default_hparams()).params
    tokens = jax.numpy.asarray([[1, 2, 11], [3, 4, 11]])
    at = lambda r: trainer.logits(params, tokens, None, trainer.default_hparams(attn_rate=r))
    assert float(jax.numpy.abs(at(0.0) - at(1.0)).max()) > 1e-3
    assert (at(1.0) == make_train(task, cfg, TrainConfig(steps=2)).logits(params, tokens)).all()


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    PINNED.write_text(json.dumps({"jax": jax.__version__, "hashes": program_hashes()},
                                 indent=1) + "\n")
elif __name__ == "__main__" and sys.argv[1:] == ["--print"]:
    print(json.dumps(program_hashes()))
