"""A Flax model on mechjax's path: ``nnx_model`` / ``linen_model`` turn a plain Flax module into a
``mechjax.models.Model`` that ``make_train``, ``run_sweep``, ``runs.open`` and the array-level
analyses take.

    model = flax_adapter.nnx_model(lambda rngs: MyNet(p, rngs=rngs), example_tokens)
    trainer = make_train(task, model, TrainConfig(...))
    result = run_sweep(trainer, seeds=range(8), workdir="runs/flax")
    cache = flax_adapter.run_with_cache(model, params, tokens, ["blocks.1"])

Parameters are a flat dict ``{path: array}``: every ``nnx.Param`` (Linen: every leaf of the
``"params"`` collection) keyed by its path joined with ``"."``, e.g.
``"blocks.0.attn.query.kernel"`` (NNX) or ``"blocks_0.attn.query.kernel"`` (Linen). That is what
sweeps checkpoint, snapshots store and ``runs.open(workdir).params(seed=...)`` returns;
``to_module`` turns one seed's dict back into an NNX module (or Linen variables).

Initialisation. ``init(key, scale)`` builds the module from the key (NNX: the factory called
with ``nnx.Rngs(key)``; Linen: ``module.init(key, example_tokens)``), so seeds are vmapped over.
``scale`` (the traced ``init_scale`` hyperparameter, default 1) multiplies every parameter of two
or more dimensions (kernels, embeddings); biases and norm scales are left as drawn, as for the
built-in transformer. An NNX module *instance* (not a factory) gives every seed the instance's
weights: seeds then differ only in their data order.

Non-parameter state (NNX RNG streams and batch statistics, Linen collections other than
``"params"``) is taken once from the module built with key 0 and is neither trained nor updated:
give a deterministic forward pass (dropout off, batch statistics not updated).

Hooks by module path (``module_paths`` lists them). Linen: ``flax.linen.intercept_methods`` sees
every submodule's ``__call__``. NNX offers no method interceptor, so ``nnx.merge`` builds a
private copy of the module and each named submodule of that copy (found with
``nnx.iter_modules``) gets a subclass of its own class whose ``__call__`` passes the output
through the hook; the user's module and class are never changed. Only ``__call__`` is seen (a
method such as ``embed.attend`` is not), and a submodule called inside a lifted transform
(``nn.scan``, ``nnx.scan``, remat) cannot be cached, as its output belongs to that transform.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
from typing import Any, Callable, Iterable, Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import nnx

from mechjax.models.hooks import unknown_names_error
from mechjax.models.protocol import Model

Params = dict[str, jax.Array]
Hooks = Mapping[str, Callable[[Any], Any]]
CONFIG_KIND = "flax"
APIS = ("nnx", "linen")


# ---- the config written to model_config.json ----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FlaxConfig:
    """What a run of a Flax model records about it (``model_config.json``).

    api:          ``"nnx"`` or ``"linen"``.
    module:       the module's class, ``"package.module.Class"``.
    param_shapes: ``((name, shape), ...)`` of every parameter, in the module's order.
    vocab_out:    the output vocabulary (the last axis of the logits).
    d_vocab:      the input vocabulary (tokens in ``[0, d_vocab)``); the output one unless given.
    n_ctx:        the longest sequence the module takes, None if unknown (not checked then).

    The trainer checks a task against ``d_vocab``, ``vocab_out`` and ``n_ctx`` before compiling.
    """

    api: str
    module: str
    param_shapes: tuple[tuple[str, tuple[int, ...]], ...]
    vocab_out: int
    d_vocab: int
    n_ctx: int | None = None

    def __post_init__(self):
        if self.api not in APIS:
            raise ValueError(f"FlaxConfig.api={self.api!r}: allowed {APIS}")
        for name in ("vocab_out", "d_vocab", "n_ctx"):
            value = getattr(self, name)
            if value is None and name == "n_ctx":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                allowed = "a positive int" + (" or None" if name == "n_ctx" else "")
                raise ValueError(f"FlaxConfig.{name}={value!r}: must be {allowed}")

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """``{name: shape}`` of every parameter."""
        return {name: tuple(shape) for name, shape in self.param_shapes}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": CONFIG_KIND, "api": self.api, "module": self.module,
                "param_shapes": {k: list(v) for k, v in self.param_shapes},
                "vocab_out": self.vocab_out, "d_vocab": self.d_vocab, "n_ctx": self.n_ctx}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "FlaxConfig":
        """The config of ``to_dict``; a missing, unknown or mistyped key raises ``ValueError``."""
        keys = {"kind", "api", "module", "param_shapes", "vocab_out", "d_vocab", "n_ctx"}
        if set(doc) != keys:
            raise ValueError(f"keys {sorted(doc)}: a Flax model config has exactly "
                             f"{sorted(keys)}")
        if doc["kind"] != CONFIG_KIND or not isinstance(doc["module"], str):
            raise ValueError(f"kind={doc['kind']!r}, module={doc['module']!r}: expected kind "
                             f"{CONFIG_KIND!r} and a class name")
        shapes = doc["param_shapes"]
        if not isinstance(shapes, Mapping) or not all(
                isinstance(s, list) and all(isinstance(n, int) and n >= 0 for n in s)
                for s in shapes.values()):
            raise ValueError("param_shapes: expected {name: [non-negative ints]}")
        return cls(doc["api"], doc["module"],
                   tuple((str(k), tuple(v)) for k, v in shapes.items()),
                   doc["vocab_out"], doc["d_vocab"], doc["n_ctx"])


@dataclasses.dataclass(frozen=True, eq=False)
class FlaxModel(Model):
    """A ``Model`` built from a Flax module; ``adapter`` holds what turns flat parameters back
    into the module (``to_module``, the hooks)."""

    adapter: Any = None


# ---- flat parameters <-> the module's own trees --------------------------------------------------
def _join(path: tuple) -> str:
    return ".".join(str(part) for part in path)


def _flat_paths(tree: Any) -> dict[str, tuple]:
    """``{"a.b.c": ("a", "b", "c")}`` for every leaf of a nested mapping (int keys kept)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    paths = {}
    for key_path, _ in leaves:
        parts = tuple(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))
                      for k in key_path)
        paths[_join(parts)] = parts
    return paths


def _get(tree: Any, path: tuple) -> Any:
    for part in path:
        tree = tree[part]
    return tree


def _class_name(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class _Adapter:
    """What both APIs share: the parameter paths and shapes, the checks, the hooks."""

    api: str
    module_name: str
    paths: dict[str, tuple]            # flat name -> the path in the module's tree
    shapes: dict[str, tuple[int, ...]]

    def check_params(self, params: Any) -> None:
        """Raise one line unless ``params`` has exactly this module's names and shapes."""
        if not isinstance(params, Mapping):
            raise TypeError(f"params: expected a flat dict {{name: array}}, got "
                            f"{type(params).__name__}")
        missing = [k for k in self.shapes if k not in params]
        extra = sorted(k for k in params if k not in self.shapes)
        wrong = [(k, tuple(jnp.shape(params[k])), s) for k, s in self.shapes.items()
                 if k in params and tuple(jnp.shape(params[k])) != s]
        if not (missing or extra or wrong):
            return
        parts = []
        if missing:
            parts.append(f"missing {_few(missing)}")
        if extra:
            near = difflib.get_close_matches(extra[0], list(self.shapes), n=1)
            parts.append(f"unexpected {_few(extra)}"
                         + (f" ({extra[0]!r} is near {near[0]!r})" if near else ""))
        if wrong:
            k, got, want = wrong[0]
            stacked = " (a leading seed axis? pass one seed's dict)" if got[1:] == want else ""
            parts.append(f"{k!r} has shape {got}, the module's is {want}{stacked}"
                         + (f" (and {len(wrong) - 1} more shapes differ)" if len(wrong) > 1
                            else ""))
        raise ValueError(f"params do not match {self.module_name}: {'; '.join(parts)}")

    def nested(self, params: Mapping[str, Any]) -> dict:
        """The flat dict as the module's nested tree (checked)."""
        self.check_params(params)
        tree: dict = {}
        for name, path in self.paths.items():
            node = tree
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = params[name]
        return tree

    def flat(self, tree: Any) -> Params:
        return {name: _get(tree, path) for name, path in self.paths.items()}

    def check_names(self, names: Iterable[str]) -> None:
        """Raise ``HookNameError`` (one line) for a name that is not a called submodule."""
        valid = self.module_paths
        unknown = [n for n in names if n not in valid]
        if unknown:
            raise unknown_names_error(unknown, valid, "module path",
                                      f"module_paths(model) lists all {len(valid)} of "
                                      f"{self.module_name}")


def _few(names: list[str], n: int = 3) -> str:
    more = f" (and {len(names) - n} more)" if len(names) > n else ""
    return f"{names[:n]}{more}"


class _Recorder:
    """The hook calls of one forward pass: ``wanted`` outputs recorded, ``hooks`` applied, each
    submodule's outermost ``__call__`` only (a class calling its parent class's ``__call__`` is
    one call of the module)."""

    def __init__(self, hooks: Hooks, wanted: frozenset[str]):
        self.hooks, self.wanted = hooks, wanted
        self.cache: dict[str, list] = {}
        self.active: set[str] = set()

    def call(self, name: str, run: Callable[[], Any]) -> Any:
        if name in self.active or (name not in self.hooks and name not in self.wanted):
            return run()
        self.active.add(name)
        try:
            out = run()
        finally:
            self.active.discard(name)
        if name in self.hooks:
            out = self.hooks[name](out)
        if name in self.wanted:
            self.cache.setdefault(name, []).append(out)
        return out


# ---- NNX -----------------------------------------------------------------------------------------
def _defines_call(module: Any) -> bool:
    return any("__call__" in vars(c) for c in type(module).__mro__
               if c not in (object, nnx.Module))


@functools.cache
def _hooked_class(cls: type) -> type:
    """A subclass of ``cls`` whose ``__call__`` goes through the instance's recorder (one per
    class, made once: NNX registers every Module class it sees)."""

    def __call__(self, *args, **kwargs):
        recorder, name = self.__dict__["_mechjax_hook"]
        return recorder.call(name, lambda: cls.__call__(self, *args, **kwargs))

    return type(cls.__name__, (cls,), {"__call__": __call__, "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__})


class _Nnx(_Adapter):
    api = "nnx"

    def __init__(self, module_or_factory: Any):
        if isinstance(module_or_factory, nnx.Module):
            self.factory = None
            module = module_or_factory
            self.graphdef, params, self.rest = nnx.split(module, nnx.Param, ...)
            self.fixed = {k: v for k, v in nnx.to_flat_state(params)}
        elif callable(module_or_factory):
            self.factory = module_or_factory
            module = nnx.eval_shape(lambda: module_or_factory(nnx.Rngs(0)))
            if not isinstance(module, nnx.Module):
                raise TypeError(f"module_or_factory: the factory returned "
                                f"{type(module).__name__}, expected an nnx.Module")
            self.graphdef, params, rest = nnx.split(module, nnx.Param, ...)
            # non-parameter state (RNG streams, statistics) fixed as built with key 0
            self.rest = (nnx.split(module_or_factory(nnx.Rngs(0)), nnx.Param, ...)[2]
                         if jax.tree.leaves(rest) else rest)
        else:
            raise TypeError(f"module_or_factory: expected an nnx.Module or a function "
                            f"rngs -> nnx.Module, got {type(module_or_factory).__name__}")
        self.module_name = _class_name(module)
        flat = list(nnx.to_flat_state(params))
        self.paths = {_join(path): tuple(path) for path, _ in flat}
        self.shapes = {_join(path): tuple(v.shape) for path, v in flat}
        self.module_paths = [_join(p) for p, m in nnx.iter_modules(module)
                             if p and _defines_call(m)]

    def draw(self, key: jax.Array) -> Params:
        if self.factory is None:
            return {_join(p): jnp.asarray(v[...]) for p, v in self.fixed.items()}
        params = nnx.state(self.factory(nnx.Rngs(key)), nnx.Param)
        return {_join(path): v[...] for path, v in nnx.to_flat_state(params)}

    def module(self, params: Mapping[str, Any]) -> nnx.Module:
        self.check_params(params)
        state = nnx.from_flat_state([(self.paths[k], params[k]) for k in self.paths])
        return nnx.merge(self.graphdef, state, self.rest)

    def run(self, params: Mapping[str, Any], tokens: jax.Array, recorder: _Recorder | None):
        module = self.module(params)
        if recorder is not None:
            subs = {_join(p): m for p, m in nnx.iter_modules(module) if p}
            for name in {*recorder.hooks, *recorder.wanted}:
                sub = subs[name]
                sub.__dict__["_mechjax_hook"] = (recorder, name)  # the private copy only
                sub.__class__ = _hooked_class(type(sub))
        return module(tokens)


# ---- Linen ---------------------------------------------------------------------------------------
class _Linen(_Adapter):
    api = "linen"

    def __init__(self, module: nn.Module, example_tokens: jax.Array):
        if not isinstance(module, nn.Module):
            raise TypeError(f"module: expected a flax.linen.Module, got {type(module).__name__}")
        self.linen, self.module_name = module, _class_name(module)
        self.example = jnp.asarray(example_tokens)
        variables = jax.eval_shape(module.init, jax.random.PRNGKey(0), self.example)
        if "params" not in variables:
            raise ValueError(f"module {self.module_name} has no 'params' collection")
        # collections other than "params" fixed as built with key 0
        self.rest = ({} if len(variables) == 1 else
                     {k: v for k, v in module.init(jax.random.PRNGKey(0), self.example).items()
                      if k != "params"})
        self.paths = _flat_paths(variables["params"])
        self.shapes = {k: tuple(_get(variables["params"], p).shape) for k, p in self.paths.items()}
        seen: list[str] = []

        def listing(next_fun, args, kwargs, context):
            name = _join(context.module.path)
            if context.method_name == "__call__" and name and name not in seen:
                seen.append(name)
            return next_fun(*args, **kwargs)

        with nn.intercept_methods(listing):
            jax.eval_shape(module.apply, variables, self.example)
        self.module_paths = seen

    def draw(self, key: jax.Array) -> Params:
        return self.flat(self.linen.init(key, self.example)["params"])

    def module(self, params: Mapping[str, Any]) -> dict:
        return {"params": self.nested(params), **self.rest}

    def run(self, params: Mapping[str, Any], tokens: jax.Array, recorder: _Recorder | None):
        variables = self.module(params)
        if recorder is None:
            return self.linen.apply(variables, tokens)

        def intercept(next_fun, args, kwargs, context):
            if context.method_name != "__call__":
                return next_fun(*args, **kwargs)
            return recorder.call(_join(context.module.path), lambda: next_fun(*args, **kwargs))

        with nn.intercept_methods(intercept):
            return self.linen.apply(variables, tokens)


# ---- the Model -----------------------------------------------------------------------------------
def nnx_model(module_or_factory: "nnx.Module | Callable[[nnx.Rngs], nnx.Module]",
              example_tokens: jax.Array, *, d_vocab: int | None = None,
              n_ctx: int | None = None) -> FlaxModel:
    """A Flax NNX module as a ``Model``.

    ``module_or_factory``: ``rngs -> module`` (each seed's parameters drawn from its key), or a
    module (every seed starts from its weights). The module maps int tokens ``[b, p]`` to logits
    ``[b, p, v]``. ``example_tokens [b, p]``: a batch it takes, to find ``v``. ``d_vocab``: the
    input vocabulary (default ``v``); ``n_ctx``: the longest sequence it takes. The trainer
    refuses a task whose tokens, labels or sequences exceed them, before compiling.
    """
    return _as_model(_Nnx(module_or_factory), example_tokens, d_vocab, n_ctx)


def linen_model(module: nn.Module, example_tokens: jax.Array, *, d_vocab: int | None = None,
                n_ctx: int | None = None) -> FlaxModel:
    """A Flax Linen module as a ``Model``: ``module.init(key, example_tokens)`` draws each
    seed's parameters and ``module.apply`` maps int tokens ``[b, p]`` to logits ``[b, p, v]``.
    ``example_tokens [b, p]``: a batch it takes; ``d_vocab``, ``n_ctx`` as for ``nnx_model``."""
    return _as_model(_Linen(module, example_tokens), example_tokens, d_vocab, n_ctx)


def _as_model(adapter: _Adapter, example_tokens: jax.Array, d_vocab: int | None,
              n_ctx: int | None) -> FlaxModel:
    example = jnp.asarray(example_tokens)
    if example.ndim != 2 or not jnp.issubdtype(example.dtype, jnp.integer):
        raise ValueError(f"example_tokens: expected int tokens [b, p], got {example.dtype} "
                         f"{tuple(example.shape)}")
    abstract = {k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in adapter.shapes.items()}
    out = jax.eval_shape(lambda p: adapter.run(p, example, None), abstract)
    shape = tuple(getattr(out, "shape", ()))
    if len(shape) != 3 or shape[:2] != tuple(example.shape):
        raise ValueError(f"{adapter.module_name} maps tokens {tuple(example.shape)} to "
                         f"{shape or type(out).__name__}; expected logits [b, p, vocab]")
    cfg = FlaxConfig(adapter.api, adapter.module_name, tuple(adapter.shapes.items()),
                     int(shape[-1]), int(shape[-1]) if d_vocab is None else d_vocab, n_ctx)

    def init(key: jax.Array, scale: Any) -> Params:
        # like the built-in transformer: scale the weight matrices, not biases or norm gains
        return {k: v * scale if v.ndim >= 2 else v for k, v in adapter.draw(key).items()}

    def logits(params, tokens, readout, key, hparams, fast):
        out = adapter.run(params, tokens, None)
        return out if readout is None else out[:, readout]

    return FlaxModel(config=cfg, init=init, logits=logits,
                     param_shapes=lambda: dict(adapter.shapes), adapter=adapter)


def _adapter(model: Any) -> _Adapter:
    if not isinstance(getattr(model, "adapter", None), _Adapter):
        raise TypeError(f"model: expected a Model from nnx_model or linen_model, got "
                        f"{type(model).__name__}")
    return model.adapter


# ---- hooks and modules ------------------------------------------------------------------------
def module_paths(model: FlaxModel) -> list[str]:
    """Every submodule path a hook or cache can name (those whose ``__call__`` runs), e.g.
    ``"blocks.0.attn"`` (NNX) or ``"blocks_0.attn"`` (Linen)."""
    return list(_adapter(model).module_paths)


def run_with_hooks(model: FlaxModel, params: Mapping[str, jax.Array], tokens: jax.Array,
                   hooks: Hooks, readout: int | None = None) -> jax.Array:
    """Logits ``[b, p, v]`` (``[b, v]`` at ``readout``) of tokens ``[b, p]`` with each submodule
    ``path`` of ``hooks`` returning ``hooks[path](output)`` instead of its output. Pure: jit,
    vmap over seeds and grad go through it."""
    adapter = _adapter(model)
    adapter.check_names(hooks)
    out = adapter.run(params, tokens, _Recorder(dict(hooks), frozenset()))
    return out if readout is None else out[:, readout]


def run_with_cache(model: FlaxModel, params: Mapping[str, jax.Array], tokens: jax.Array,
                   names: "Iterable[str] | str | None" = None) -> dict[str, Any]:
    """``{path: output}`` of the submodules ``names`` (None: every one of ``module_paths``)
    for tokens ``[b, p]``; a submodule called more than once gives the tuple of its outputs in
    call order."""
    adapter = _adapter(model)
    names = (list(adapter.module_paths) if names is None else
             [names] if isinstance(names, str) else list(names))
    adapter.check_names(names)
    recorder = _Recorder({}, frozenset(names))
    adapter.run(params, tokens, recorder)
    idle = [n for n in names if n not in recorder.cache]
    if idle:
        raise ValueError(f"submodules {idle} were not called for tokens {tuple(tokens.shape)}")
    outs = recorder.cache
    return {n: outs[n][0] if len(outs[n]) == 1 else tuple(outs[n]) for n in names}


def to_module(model: FlaxModel, params: Mapping[str, Any]) -> Any:
    """One seed's flat parameters (e.g. ``runs.open(workdir).params(seed=1)``) back in Flax's
    form: an ``nnx.Module`` (NNX) or the variables ``{"params": ...}`` for ``module.apply``
    (Linen). A dict that does not match the module raises one line."""
    adapter = _adapter(model)
    params = {k: jnp.asarray(v) for k, v in params.items()} if isinstance(params, Mapping) \
        else params
    return adapter.module(params)
