"""Automatic circuit detection on the IMIR manifold (IMIR paper; docs/imir.md, section 7).

Per enabled setting (2-layer recall on in-context data, on in-weights data; 2-hop induction in
5 layers): the theory's model (``imir_config``: frozen centred one-hot embeddings and
block-swapping ``W_OV``, every entry of every ``W_KQ`` and ``W_U`` trained from small random
weights, so off-manifold noise is present) is trained for ``n_seeds`` seeds in one program
(``run_sweep``), then each seed's weights go through ``mechjax.analysis.imir.detection.detector``:
the
explained fraction, greedy elimination at every budget of ``tau_curve`` (or ``tau`` alone) and the
budget the rule picks (``detection.budget``), units, circuits, canonical units
vs helpers, accuracies of the full model, the circuit and the circuit without helpers.
``--weights=FILE.npz`` or ``--from_workdir=RUN --seed=N`` detects a given model instead (read in
``weights_setting``'s frame; a run imir_detect trained is read in the task it was trained on),
training nothing (``mechjax.analysis.imir.detection.sources``).

Data flow: config -> build (every check, a given model's shape included) -> per setting: train ->
detect per seed -> summary.json (per seed + seed_stats) and figures.
"""
from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mechjax.cli import experiment
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.detection import budget
from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection import explain as ex
from mechjax.analysis.imir.detection import sources as src
from mechjax.analysis.imir.forward.truncated import coordinate_model, truncated_model
from mechjax.analysis.imir.manifold import project as proj
from mechjax.models.config import ConfigError
from mechjax.interop.weights import save_npz
from mechjax.io import write_json
from mechjax.plots import imir_detect as plots
from mechjax.plots.save import save_figure
from mechjax.sweeps.sweep import log, run_sweep
from mechjax.tasks import blocklist as bl
from mechjax.training.train import TrainConfig, make_train

from experiments.imir_detect.schema import SCHEMA, SETTINGS
from experiments.imir_detect.summary import format_summary, summarise  # noqa: F401 (CLI)

def _spec(name: str, s: dict) -> bl.BlockListSpec:
    try:
        kind = "recall" if s["hops"] == 1 else "khop"
        return bl.BlockListSpec(kind=kind, hops=s["hops"], n_common=s["n_common"],
                                n_rare=s["n_rare"], n_blocks=s["n_blocks"],
                                offsets=s["offsets"])
    except ValueError as err:
        raise ConfigError(f"{name}: {err}") from None


POSITION_MODE = {"paper": "literal", "all": "all"}


def setting(name: str, s: dict) -> dict:
    """The setting's task spec, frame and basis (position selections: ``s['positions']``)."""
    # a trained run's config reaches here unvalidated: name what the basis cannot express
    for key, allowed in (("offsets", ("fixed", "cyclic")), ("positions", tuple(POSITION_MODE)),
                         ("causal", (True, False))):
        if s[key] not in allowed:
            raise ConfigError(f"{name}.{key}={s[key]!r}: the detector's basis expresses "
                              f"{', '.join(map(str, allowed))}")
    if s["offsets"] == "cyclic" and s["causal"]:
        # a rotated query sits mid-sequence: a causal mask would hide the blocks after it
        raise ConfigError(f"{name}.offsets=cyclic with {name}.causal=True: a causal model "
                          "needs offsets=fixed (the query ends the sequence)")
    spec = _spec(name, s)
    frame = ib.make_frame(ib.TokenStructure.from_spec(spec), spec.seq_len, s["n_layers"],
                          s["n_heads"])
    basis = ib.make_basis(frame, position_mode=POSITION_MODE[s["positions"]],
                          block_len=spec.block_len)
    return {"name": name, "cfg": s, "spec": spec, "frame": frame, "basis": basis}


TASK_KEYS = ("hops", "n_layers", "n_heads", "n_common", "n_rare", "n_blocks", "f_r", "f_v",
             "causal", "offsets", "positions")
# a run trained before these keys existed was the non-causal cyclic model on the extended set
LEGACY = {"causal": False, "offsets": "cyclic", "positions": "all"}


def given_model(c: dict) -> src.Source | None:
    """The model ``--weights`` or ``--from_workdir --seed`` names (None: train)."""
    if c["weights"] and c["from_workdir"]:
        raise ConfigError(f"--weights={c['weights']} and --from_workdir={c['from_workdir']}: "
                          "give one model source, not both")
    try:
        if c["weights"]:
            return src.from_file(c["weights"])
        if c["from_workdir"]:
            step = None if c["from_step"] < 0 else c["from_step"]
            return src.from_run(c["from_workdir"], c["from_seed"], step, c["weights_setting"])
    except ex.DetectError as err:
        raise ConfigError(str(err)) from None
    return None


def bare_weights_model(c: dict, name: str) -> dict:
    """A bare ``--weights`` file (or a run imir_detect did not train) holds no attention mask:
    the caller names it (``causal``)."""
    if c["weights_causal"] is None:
        what = (f"--weights={c['weights']}: a bare weights file" if c["weights"] else
                f"--from_workdir={c['from_workdir']}: a run without an imir_detect {name} config")
        raise ConfigError(f"{what} does not say whether "
                          "its attention is causal; pass --causal=True (the paper's model) or "
                          f"--causal=False (read in setting {name}, offsets="
                          f"{c[name]['offsets']}, positions={c[name]['positions']})")
    return {"causal": c["weights_causal"]}


def build(config) -> dict:
    """Every check before anything is computed (a given model's shape included)."""
    c = {k: experiment.as_dict(config[k]) if hasattr(config[k], "keys") else config[k]
         for k in SCHEMA.keys}
    for tau in taus_of(c):
        dt.check_tau(tau)
    source = given_model(c)
    settings = {}
    for name in SETTINGS:
        s = c[name]
        if s["steps"] % s["eval_every"]:
            raise ConfigError(f"{name}.steps={s['steps']} must be a multiple of "
                              f"{name}.eval_every={s['eval_every']}")
        if source is not None and name == c["weights_setting"]:
            # a model imir_detect trained: read it in the task it was trained on
            trained = (source.run_config or {}).get(name) or {}
            if trained:
                trained = {**LEGACY, **trained}
            else:
                trained = bare_weights_model(c, name)
            settings[name] = setting(name, {**s, **{k: trained[k] for k in TASK_KEYS
                                                      if k in trained}})
        elif s["enabled"] and source is None:
            settings[name] = setting(name, s)
    if source is not None:
        flag = (f"--weights={c['weights']}" if c["weights"]
                else f"--from_workdir={c['from_workdir']}")
        try:
            ex.check_shapes(ex.effective_weights(source.params), settings[c["weights_setting"]]
                            ["frame"])
        except ex.DetectError as err:
            raise ConfigError(f"{flag}: {err} (setting {c['weights_setting']})") from None
    elif not any(c[n]["enabled"] for n in SETTINGS):
        raise ConfigError("no setting is enabled and neither --weights nor --from_workdir is "
                          "given: nothing to do")
    return {"c": c, "settings": settings, "source": source}


def train(st: dict, seeds: list[int], workdir: str) -> dict[str, np.ndarray]:
    """All seeds of one setting in one program; returns trained params ``{name: [n_seeds, ..]}``
    (``train_in=manifold``: the coordinates are trained and ``W(theta)`` returned, and written
    per seed as ``<workdir>/<setting>/weights_seed<N>.npz``)."""
    s, frame, spec, basis = st["cfg"], st["frame"], st["spec"], st["basis"]
    task = bl.blocklist_task(spec, s["batch_size"], eval_size=512)
    fixed = ib.fixed_params(frame)
    shapes = {k: v.shape for k, v in ib.zero_trainables(frame).items()}

    def start_weights(key):
        ks = jax.random.split(jax.random.fold_in(key, 7), len(shapes))
        return {k: s["init_std"] * jax.random.normal(kk, shp)
                for (k, shp), kk in zip(shapes.items(), ks)}

    if s["train_in"] == "manifold":
        model = coordinate_model(basis, s["causal"])
        # the all-weights arm's start, projected: the two arms start as close as the span allows
        start = lambda key: {"theta": proj.coords(basis, start_weights(key))}
    else:
        # the exact forward on the populated path blocks (mechjax.analysis.imir.forward.truncated)
        model = truncated_model(frame, ib.imir_config(frame, s["causal"]))
        start = lambda key: {**fixed, **start_weights(key)}
    trainer = make_train(task, model, TrainConfig(steps=s["steps"], eval_every=s["eval_every"],
                                                  optimizer=s["optimizer"]))

    def init_state(key, hparams, seed_index):
        return trainer.init_from_params(key, hparams, start(key))

    hp = {"lr": s["lr"], "task.f_r": s["f_r"], "task.f_v": s["f_v"]}
    result = run_sweep(trainer, seeds, hp, os.path.join(workdir, st["name"]),
                       init_state=init_state)
    m = result.metrics_at(grid=0)
    log(f"{st['name']}: final train loss per seed {np.round(m['train/loss'][:, -1], 3)}")
    params = {k: np.asarray(v) for k, v in result.params_at(grid=0).items()}
    if s["train_in"] != "manifold":
        return params
    stacked = jax.vmap(lambda th: proj.weights(basis, th))(jnp.asarray(params["theta"]))
    stacked = {**{k: np.broadcast_to(np.asarray(v), (len(seeds),) + v.shape)
                  for k, v in fixed.items()},
               **{k: np.asarray(v) for k, v in stacked.items()}}
    # the run's checkpoints hold theta; W(theta) per seed as a state dict any tool reads
    # (``--weights=FILE --causal=...`` detects one again without retraining)
    for i, seed in enumerate(seeds):
        save_npz({k: v[i] for k, v in stacked.items()},
                 os.path.join(workdir, st["name"], f"weights_seed{seed}.npz"))
    return stacked


def _batches(st: dict, d: dict, seed: int):
    tp = {"f_r": jnp.float32(st["cfg"]["f_r"]), "f_v": jnp.float32(st["cfg"]["f_v"])}
    return (bl.sample(st["spec"], jax.random.key(10_000 + seed), tp, d["batch_size"]),
            bl.sample(st["spec"], jax.random.key(20_000 + seed), tp, d["eval_size"]))


def taus_of(c: dict) -> tuple[float, ...]:
    """The budgets detected at: ``tau`` alone when given, else the curve ``tau_curve``."""
    return (c["tau"],) if c["tau"] is not None else tuple(c["tau_curve"])


def _curve(st: dict, params: dict, d: dict, taus: tuple[float, ...], batch, eval_batch
           ) -> list[dt.Detection]:
    return dt.detect_curve(params, st["basis"], batch, taus, eval_batch=eval_batch,
                           exact_max=d["exact_max"], screen=d["screen"], refresh=d["refresh"],
                           bulk_fraction=d["bulk_fraction"], overshoot=d["overshoot"],
                           cost_bulk=d["cost_bulk"], curve_points=d["curve_points"],
                           causal=st["cfg"]["causal"], mode=d["mode"])


def detect_one(st: dict, params: dict, c: dict, seed: int) -> tuple[dt.Detection, dict]:
    """The detection at every budget, the one the rule picks (``budget.pick``) and its JSON
    report (with the budget curve; the head-level comparison and the batch-doubling check
    (``budget.doubling``) when asked)."""
    d, taus = c["detect"], taus_of(c)
    batch, eval_batch = _batches(st, d, seed)
    dets = _curve(st, params, d, taus, batch, eval_batch)
    i, met = budget.pick([x.accuracy["selection_circuit"] for x in dets],
                         dets[0].accuracy["selection_full"], c["tau_margin"])
    det = dets[i]
    rep = {"tau": taus[i], "tau_rule_met": met, **dt.report(det),
           "tau_curve": budget.curve(dets, taus)}
    if d["batch_doubling"]:
        doubled = _batches(st, {**d, "batch_size": 2 * d["batch_size"]}, seed)[0]
        again = _curve(st, params, d, taus, doubled, eval_batch)
        rep["batch_doubling"] = {"batch_size": d["batch_size"], "doubled": 2 * d["batch_size"],
                                 **budget.doubling([x.elimination.kept for x in dets],
                                                   [x.elimination.kept for x in again], i)}
    rep["model"] = {k: st["cfg"][k] for k in ("causal", "offsets", "positions", "train_in",
                                               "optimizer", "init_std")}
    if d["head_ablation"]:
        rep["heads"] = dt.against_heads(params, det, st["basis"], eval_batch, taus[i],
                                        causal=st["cfg"]["causal"])
    return det, rep


def figures(st: dict, dets: list[dt.Detection], reps: list[dict], fig_dir: str,
            seeds: list[int]) -> None:
    name, f = st["name"], st["frame"]
    if len(reps[0]["tau_curve"]["tau"]) > 1:
        fig = plots.budget_curve([r["tau_curve"] for r in reps], [r["tau"] for r in reps],
                                 [f"seed {s}" for s in seeds],
                                 title=f"{name}: the circuit at each loss budget")
        save_figure(fig, os.path.join(fig_dir, f"{name}_budget_curve.png"))
    for seed, det in zip(seeds, dets):
        fig = plots.circuit_diagram(det.units, det.kinds, f.n_layers,
                                    title=f"{name}, seed {seed}: kept units")
        save_figure(fig, os.path.join(fig_dir, f"{name}_circuit_seed{seed}.png"))
    fig = plots.accuracy_vs_kept([d.curve for d in dets], [f"seed {s}" for s in seeds],
                                 title=f"{name}: accuracy along the elimination")
    save_figure(fig, os.path.join(fig_dir, f"{name}_accuracy_vs_kept.png"))


def run(config, workdir: str, overwrite: bool = False) -> dict[str, Any]:
    config = SCHEMA.validate(config)
    b = build(config)
    c = b["c"]
    experiment.start(workdir, config, overwrite)
    seeds = experiment.seeds(config)
    fig_dir = os.path.join(workdir, "figures")
    summary: dict[str, Any] = {"tau_rule": (budget.RULE if c["tau"] is None else
                                            "fixed by --config.tau"),
                               "tau_curve": list(taus_of(c)), "tau_margin": c["tau_margin"]}
    if b["source"] is not None:
        st = b["settings"][c["weights_setting"]]
        # a run's seed draws the data its own training run detected on, and names the figures
        seed = c["from_seed"] if c["from_workdir"] else 0
        det, rep = detect_one(st, b["source"].params, c, seed)
        if det.deviations:
            log(f"warning: {b['source'].description} is outside the IMIR assumptions "
                f"({'; '.join(det.deviations)}); the manifold explains "
                f"{det.explained['total']:.3f} of its KQ/unembedding weights")
        summary["weights"] = {"source": b["source"].description, "file": c["weights"],
                              "setting": st["name"], **rep}
        figures(st, [det], [rep], fig_dir, [seed])
    else:
        for name, st in b["settings"].items():
            stacked = train(st, seeds, workdir)
            dets, reps = [], []
            for i, seed in enumerate(seeds):
                det, rep = detect_one(st, {k: v[i] for k, v in stacked.items()}, c, seed)
                dets.append(det)
                reps.append(rep)
                log(f"{name} seed {seed}: tau {rep['tau']} (rule met: {rep['tau_rule_met']}): "
                    f"kept {rep['n_kept']} coordinates, {rep['n_canonical']}"
                    f" canonical units, {rep['n_helpers']} helpers; acc full "
                    f"{rep['acc/full']:.3f} circuit {rep['acc/circuit']:.3f} without helpers "
                    f"{rep['acc/circuit_without_helpers']:.3f}")
            summary[name] = summarise(name, reps, seeds)
            figures(st, dets, reps, fig_dir, seeds)
    write_json(os.path.join(workdir, "summary.json"), summary)
    return summary
