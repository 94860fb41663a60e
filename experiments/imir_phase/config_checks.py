"""The imir_phase config's relations between keys (``build``), checked before anything runs;
each error names the bad value and what is allowed."""
from __future__ import annotations

from mechjax.cli import experiment
from mechjax.analysis.imir.dynamics import four_coord as rd
from mechjax.models.config import ConfigError
from mechjax.tasks import blocklist as bl

from experiments.imir_phase.schema import SCHEMA


def _sizes(name: str, c: dict) -> rd.RecallSizes:
    try:
        return rd.RecallSizes(c["n_common"], c["n_rare"], c["n_blocks"])
    except ValueError as err:
        raise ConfigError(f"{name}: {err}") from None


def _spec(name: str, c: dict, b: int = 1) -> bl.BlockListSpec:
    try:
        return bl.BlockListSpec(kind="recall", n_common=c["n_common"], n_rare=c["n_rare"],
                                n_blocks=c["n_blocks"], burstiness=b)
    except ValueError as err:
        raise ConfigError(f"{name}: {err}") from None


def build(config) -> dict:
    """The checked ``config``'s objects (the relations between keys checked here, naming the
    bad value and what is allowed) before anything runs."""
    c = {k: experiment.as_dict(config[k]) for k in SCHEMA.keys}
    four = _four_coord_objects(c)   # checked first (the order the errors come in)
    return {**c, "exact_spec": _exact_spec(c), **four}


def _exact_spec(c: dict) -> bl.BlockListSpec:
    """The exact model's sections (``exact``, ``exact_b``, ``exact_check``, ``exact_theorems``,
    ``exact_sgd``, ``validate*``, ``sizes_scan``); returns the default diagram's spec."""
    e = c["exact"]
    if e["n_blocks"] > 5:
        raise ConfigError(f"exact.n_blocks={e['n_blocks']}: allowed 2..5 (the class count grows "
                          "combinatorially with the blocks)")
    if not 1 <= e["b"] <= e["n_blocks"] - 1:
        raise ConfigError(f"exact.b={e['b']}: must be in [1, n_blocks - 1 = {e['n_blocks'] - 1}]")
    exact_spec = _spec("exact", e, e["b"])
    trains = c["validate"]["n_cells"] or c["validate_standard"]["n_cells"]
    if e["n_blocks"] < 3 and trains:
        raise ConfigError(f"exact.n_blocks={e['n_blocks']}: must be >= 3 for the in-weights "
                          "read-off (a distractor block must exist)")
    eb = c["exact_b"]
    if not 3 <= eb["n_blocks"] <= 5:
        raise ConfigError(f"exact_b.n_blocks={eb['n_blocks']}: allowed 3..5")
    _spec("exact_b", eb, eb["n_blocks"] - 1)
    _spec("exact_check", c["exact_check"])
    xt = c["exact_theorems"]
    if xt["steps"] % xt["n_save_train"]:
        raise ConfigError(f"exact_theorems.steps={xt['steps']} must be a multiple of "
                          f"exact_theorems.n_save_train={xt['n_save_train']}")
    if xt["steps"] * xt["lr"] > float(xt["t1"]) * (1 + 1e-9):
        raise ConfigError(f"exact_theorems: steps * lr = {xt['steps'] * xt['lr']} must be <= "
                          f"t1 = {xt['t1']} (the emergence cell's exact trajectory is the "
                          "Theorem 2 solve's)")
    # Theorem 3 compares with the 4-coordinate gradient on the same sizes
    _sizes("exact_theorems.t3_n_blocks", {**e, "n_blocks": xt["t3_n_blocks"]})
    _spec("exact_theorems.t3_n_blocks", {**e, "n_blocks": xt["t3_n_blocks"]})
    if e["n_blocks"] < 3:
        raise ConfigError(f"exact.n_blocks={e['n_blocks']}: must be >= 3 for exact_theorems "
                          "(the in-weights read-off needs a distractor block)")
    es = c["exact_sgd"]
    if es["steps"] % es["n_save"]:
        raise ConfigError(f"exact_sgd.steps={es['steps']} must be a multiple of "
                          f"exact_sgd.n_save={es['n_save']}")
    for name in ("validate", "validate_standard"):
        if c[name]["n_cells"] > e["n"] ** 2:
            raise ConfigError(f"{name}.n_cells={c[name]['n_cells']}: at most exact.n ** 2 = "
                              f"{e['n'] ** 2}")
    v = c["validate"]
    if v["n_cells"] and round(float(e["t1"]) / v["lr"]) < e["n_save"]:
        raise ConfigError(f"validate.lr={v['lr']}: exact.t1 / lr must be >= exact.n_save")
    for i, (n_common, n_rare, n_blocks, n) in enumerate(c["sizes_scan"]["specs"]):
        name = f"sizes_scan.specs[{i}]"
        if not 3 <= n_blocks <= 5:
            raise ConfigError(f"{name}: n_blocks={n_blocks}: allowed 3..5 (the in-weights "
                              "read-off needs a distractor block; the class count grows "
                              "combinatorially with the blocks)")
        _spec(name, {"n_common": n_common, "n_rare": n_rare, "n_blocks": n_blocks}, e["b"])
    vs = c["validate_standard"]
    if vs["steps"] % vs["n_evals"]:
        raise ConfigError(f"validate_standard.steps={vs['steps']} must be a multiple of "
                          f"validate_standard.n_evals={vs['n_evals']}")
    if vs["n_cells"] and vs["sgd_lr"]:
        n = round(float(e["t1"]) / vs["sgd_lr"])
        if not vs["n_evals"] <= n <= MAX_SGD_STEPS:
            raise ConfigError(f"validate_standard.sgd_lr={vs['sgd_lr']}: exact.t1 / sgd_lr = {n} "
                              f"SGD steps; allowed {vs['n_evals']} (n_evals) .. {MAX_SGD_STEPS}")
    return exact_spec


# the SGD arm's step count is set by the diagram's horizon: a tiny lr would mean a run of days
MAX_SGD_STEPS = 100_000


def sgd_steps(t1: float, lr: float, n_evals: int) -> int:
    """The SGD arm's steps, ``t1 / lr`` rounded down to a multiple of ``n_evals`` (its last
    read-off at t = steps x lr <= t1, as ``cell_stages.theory_cells``)."""
    n = int(round(float(t1) / lr))
    return n - n % n_evals


def _four_coord_objects(c: dict) -> dict:
    """The 4-coordinate comparison's sections (``task``, ``task_b``, ``grid``, ``theorem2``,
    ``theorem3``, ``cells``, ``ode_check``): their sizes and specs."""
    t = c["task"]
    sizes = _sizes("task", t)
    if not t["b"] <= t["n_blocks"] - 1:
        raise ConfigError(f"task.b={t['b']}: must be in [1, n_blocks - 1 = {t['n_blocks'] - 1}]")
    spec = _spec("task", t, t["b"])
    sizes_b = _sizes("task_b", c["task_b"])
    g = c["grid"]
    if g["f_r_min"] >= g["f_r_max"] or g["f_v_min"] >= g["f_v_max"]:
        raise ConfigError(f"grid: need f_r_min < f_r_max and f_v_min < f_v_max, got {g}")
    t2 = c["theorem2"]
    sizes_t2 = _sizes("theorem2", t2)
    for fr, fv in t2["settings"]:
        if fr + (1 - fr) * fv == 0:
            raise ConfigError("theorem2.settings: s = f_r + (1 - f_r) f_v must be > 0")
    t3 = c["theorem3"]
    sizes_t3 = _sizes("theorem3", t3)
    if not t3["b_max"] <= t3["n_blocks"] - 1:
        raise ConfigError(f"theorem3.b_max={t3['b_max']}: must be in [2, n_blocks - 1]")
    sizes_t3_small = _sizes("theorem3", {**t3, "n_blocks": t3["small_n_blocks"]})
    if t3["small_n_blocks"] - 1 < t3["b_max"]:
        raise ConfigError(f"theorem3.small_n_blocks={t3['small_n_blocks']}: must be > b_max")
    ce = c["cells"]
    if ce["steps"] % ce["n_save"]:
        raise ConfigError(f"cells.steps={ce['steps']} must be a multiple of "
                          f"cells.n_save={ce['n_save']}")
    oc = c["ode_check"]
    check_spec = _spec("ode_check", oc)
    n_gd = int(round(oc["t1"] / oc["lr"]))
    if n_gd % oc["n_save"]:
        raise ConfigError(f"ode_check: t1/lr = {n_gd} steps must be a multiple of n_save="
                          f"{oc['n_save']}")
    if bl.support_size(check_spec) > 200_000:
        raise ConfigError(f"ode_check: {bl.support_size(check_spec)} sequences to enumerate; "
                          "use a smaller spec (<= 200000)")
    return {"sizes": sizes, "spec": spec, "sizes_b": sizes_b, "sizes_t2": sizes_t2,
            "sizes_t3": sizes_t3, "sizes_t3_small": sizes_t3_small, "check_spec": check_spec}
