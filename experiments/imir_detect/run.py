"""Automatic circuit detection on the IMIR manifold (issue 15 part 2; SPEC 3.6).

Per enabled setting (2-layer recall on in-context data, on in-weights data; 2-hop induction in
5 layers): the theory's model (``imir_config``: frozen centred one-hot embeddings and
block-swapping ``W_OV``, every entry of every ``W_KQ`` and ``W_U`` trained from small random
weights, so off-manifold noise is present) is trained for ``n_seeds`` seeds in one program
(``run_sweep``), then each seed's weights go through ``mechjax.analysis.imir.detection.detector``:
the
explained fraction, greedy elimination to the budget ``tau``, units, circuits, canonical units
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

from mechjax import experiment
from mechjax.analysis.imir.manifold import basis as ib
from mechjax.analysis.imir.detection import detector as dt
from mechjax.analysis.imir.detection import explain as ex
from mechjax.analysis.imir.detection import sources as src
from mechjax.analysis.imir.forward.truncated import TruncatedTrainer
from mechjax.analysis.seeds import format_stats, seed_stats
from mechjax.config import ConfigError
from mechjax.io import write_json
from mechjax.plots import imir_detect as plots
from mechjax.plots.save import save_figure
from mechjax.sweep import log, run_sweep
from mechjax.tasks import blocklist as bl
from mechjax.train import TrainConfig

from experiments.imir_detect.schema import SCHEMA, SETTINGS

# What "recovers the canonical coordinates" means per setting (docs: circuits.ABGD).
EXPECTED = {"recall_icl": ("alpha", "beta", "gamma"), "recall_iwl": ("delta",)}
STAT_KEYS = ("n_coordinates_total", "manifold_explained_fraction", "n_kept", "n_units",
             "n_canonical", "n_helpers", "acc/full", "acc/projected", "acc/circuit",
             "acc/circuit_without_helpers")


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


SPEC_KEYS = ("hops", "n_layers", "n_heads", "n_common", "n_rare", "n_blocks", "f_r", "f_v",
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


def build(config) -> dict:
    """Every check before anything is computed (a given model's shape included)."""
    c = {k: experiment.as_dict(config[k]) if hasattr(config[k], "keys") else config[k]
         for k in SCHEMA.keys}
    dt.check_tau(c["tau"])
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
            settings[name] = setting(name, {**s, **{k: trained[k] for k in SPEC_KEYS
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
    """All seeds of one setting in one program; returns trained params ``{name: [n_seeds, ..]}``."""
    s, frame, spec = st["cfg"], st["frame"], st["spec"]
    task = bl.blocklist_task(spec, s["batch_size"], eval_size=512)
    # the exact forward on the populated path blocks (mechjax.analysis.imir.forward.truncated)
    trainer = TruncatedTrainer(frame, task, ib.imir_config(frame, s["causal"]),
                               TrainConfig(steps=s["steps"], eval_every=s["eval_every"],
                                           optimizer="adam"))
    fixed = ib.fixed_params(frame)
    shapes = {k: v.shape for k, v in ib.zero_trainables(frame).items()}

    def init_state(key, hparams, seed_index):
        ks = jax.random.split(jax.random.fold_in(key, 7), len(shapes))
        w = {k: s["init_std"] * jax.random.normal(kk, shp) for (k, shp), kk in zip(shapes.items(), ks)}
        return trainer.init_from_params(key, hparams, {**fixed, **w})

    hp = {"lr": s["lr"], "task.f_r": s["f_r"], "task.f_v": s["f_v"]}
    result = run_sweep(trainer, seeds, hp, os.path.join(workdir, st["name"]),
                       init_state=init_state)
    m = result.metrics_at(grid=0)
    log(f"{st['name']}: final train loss per seed {np.round(m['train/loss'][:, -1], 3)}")
    return {k: np.asarray(v) for k, v in result.params_at(grid=0).items()}


def _batches(st: dict, d: dict, seed: int):
    tp = {"f_r": jnp.float32(st["cfg"]["f_r"]), "f_v": jnp.float32(st["cfg"]["f_v"])}
    return (bl.sample(st["spec"], jax.random.key(10_000 + seed), tp, d["batch_size"]),
            bl.sample(st["spec"], jax.random.key(20_000 + seed), tp, d["eval_size"]))


def detect_one(st: dict, params: dict, d: dict, tau: float, seed: int) -> tuple[dt.Detection, dict]:
    """The detection and its JSON report (with the head-level comparison when asked)."""
    batch, eval_batch = _batches(st, d, seed)
    det = dt.detect(params, st["basis"], batch, tau, eval_batch=eval_batch,
                    exact_max=d["exact_max"], screen=d["screen"], refresh=d["refresh"],
                    bulk_fraction=d["bulk_fraction"], overshoot=d["overshoot"],
                    cost_bulk=d["cost_bulk"],
                    curve_points=d["curve_points"], causal=st["cfg"]["causal"])
    rep = dt.report(det)
    rep["model"] = {k: st["cfg"][k] for k in ("causal", "offsets", "positions")}
    if d["head_ablation"]:
        rep["heads"] = dt.against_heads(params, det, st["basis"], eval_batch, tau,
                                        causal=st["cfg"]["causal"])
    return det, rep


def recovered(name: str, rep: dict) -> bool | None:
    """Whether the setting's canonical coordinates survived (None where none is named)."""
    if name in EXPECTED:
        return set(EXPECTED[name]) <= set(rep["abgd_found"] or [])
    return None


def summarise(name: str, reports: list[dict], seeds: list[int]) -> dict:
    out: dict[str, Any] = {"seeds": seeds, "per_seed": reports}
    for k in STAT_KEYS:
        out[k] = seed_stats([r[k] for r in reports])
    rec = [recovered(name, r) for r in reports]
    if rec[0] is not None:
        out["canonical_recovered_all_seeds"] = all(rec)
        out["canonical_recovered"] = rec
    gap = [r["acc/full"] - r["acc/circuit"] for r in reports]
    out["acc_gap_full_minus_circuit"] = seed_stats(gap)
    if "heads" in reports[0]:
        out["heads/n_helpers_in_unimportant_heads"] = seed_stats(
            [r["heads"]["n_helpers_in_unimportant_heads"] for r in reports])
        out["heads/n_heads_important"] = seed_stats(
            [r["heads"]["n_heads_important"] for r in reports])
    out["n_circuits_with_4_canonical"] = seed_stats(
        [sum(c["n_canonical"] >= 4 for c in r["circuits"]) for r in reports])
    # the longest chain of look-ups a kept readout reads out (2: a 2-hop composition)
    out["max_hops"] = seed_stats([max((c["hops"] for c in r["circuits"]), default=0)
                                  for r in reports])
    return out


def figures(st: dict, dets: list[dt.Detection], fig_dir: str, seeds: list[int]) -> None:
    name, f = st["name"], st["frame"]
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
    summary: dict[str, Any] = {"tau": c["tau"]}
    if b["source"] is not None:
        st = b["settings"][c["weights_setting"]]
        # a run's seed draws the data its own training run detected on, and names the figures
        seed = c["from_seed"] if c["from_workdir"] else 0
        det, rep = detect_one(st, b["source"].params, c["detect"], c["tau"], seed)
        if det.deviations:
            log(f"warning: {b['source'].description} is outside the IMIR assumptions "
                f"({'; '.join(det.deviations)}); the manifold explains "
                f"{det.explained['total']:.3f} of its KQ/unembedding weights")
        summary["weights"] = {"source": b["source"].description, "file": c["weights"],
                              "setting": st["name"], **rep}
        figures(st, [det], fig_dir, [seed])
    else:
        for name, st in b["settings"].items():
            stacked = train(st, seeds, workdir)
            dets, reps = [], []
            for i, seed in enumerate(seeds):
                det, rep = detect_one(st, {k: v[i] for k, v in stacked.items()}, c["detect"],
                                      c["tau"], seed)
                dets.append(det)
                reps.append(rep)
                log(f"{name} seed {seed}: kept {rep['n_kept']} coordinates, {rep['n_canonical']}"
                    f" canonical units, {rep['n_helpers']} helpers; acc full "
                    f"{rep['acc/full']:.3f} circuit {rep['acc/circuit']:.3f} without helpers "
                    f"{rep['acc/circuit_without_helpers']:.3f}")
            summary[name] = summarise(name, reps, seeds)
            figures(st, dets, fig_dir, seeds)
    write_json(os.path.join(workdir, "summary.json"), summary)
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"tau: {summary['tau']}"]
    if "weights" in summary:
        w = summary["weights"]
        lines += [f"{k:>32s}: {w[k]}" for k in ("source", "setting", *STAT_KEYS, "deviations",
                                                 "abgd_found")]
        if "heads" in w:
            lines.append(f"{'helpers in harmless heads':>32s}: "
                         f"{w['heads']['helpers_in_unimportant_heads']}")
    for name in SETTINGS:
        if name not in summary:
            continue
        s = summary[name]
        lines.append(f"{name}:")
        for k in (*STAT_KEYS, "acc_gap_full_minus_circuit", "n_circuits_with_4_canonical",
                  "max_hops", "heads/n_heads_important", "heads/n_helpers_in_unimportant_heads"):
            if k not in s:
                continue
            lines.append(f"{k:>32s}: {format_stats(s[k])}")
        if "canonical_recovered" in s:
            lines.append(f"{'canonical_recovered':>32s}: {s['canonical_recovered']}")
        for i, r in enumerate(s["per_seed"]):
            lines.append(f"{'seed ' + str(s['seeds'][i]):>32s}: canonical "
                         f"{[u for u, k in r['units'].items() if k != 'helper']} helpers "
                         f"{[u for u, k in r['units'].items() if k == 'helper']}")
            if "heads" in r:
                lines.append(f"{'':>32s}  helpers in heads whose ablation is harmless: "
                             f"{r['heads']['helpers_in_unimportant_heads']}")
    return "\n".join(lines)
