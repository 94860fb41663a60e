"""An experiment's config declared once: every key, what it means and what values it allows.

Each experiment writes one ``Schema`` (its ``schema.py``); its config files (``configs/*.py``)
only give values. The same declaration

* validates a loaded config (``Schema.validate``): unknown keys, missing keys and out-of-range
  values raise a one-line ``ConfigError`` naming the key, the value and what is allowed;
* fills keys that have a default and normalizes values (sequences become tuples);
* writes the ``--help`` text of ``--config`` (``Schema.help``);
* explains a bad ``--config.<key>=<value>`` override (``Schema.override_error``).

Checks that relate several keys (a batch no larger than the training set, ...) stay in the
experiment's ``build``; everything about one key lives here.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Callable, Mapping

from mechjax.models.config import ConfigError

REQUIRED = object()  # a key without a default: the config file must give it


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Key:
    """One config value: ``allowed`` says in words what ``test`` accepts."""

    allowed: str
    test: Callable[[Any], bool]
    doc: str = ""
    default: Any = REQUIRED
    convert: Callable[[Any], Any] = lambda v: v
    detail: Callable[[Any], str] = lambda v: ""  # which part of a bad value is wrong

    def check(self, path: str, value: Any) -> Any:
        if not self.test(value):
            raise ConfigError(f"{path}={value!r}: must be {self.allowed}{self.detail(value)}")
        return self.convert(value)

    def describe(self) -> str:
        default = "" if self.default is REQUIRED else f"; default {self.default!r}"
        return f"{self.allowed}{default}" + (f". {self.doc}" if self.doc else "")


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def _in_bounds(v: float, low, high, low_open, high_open) -> bool:
    return ((low is None or (v > low if low_open else v >= low))
            and (high is None or (v < high if high_open else v <= high)))


def integer(doc: str = "", *, min: int | None = 1, max: int | None = None,
            default: Any = REQUIRED) -> Key:
    """An int (not a bool) in ``[min, max]``."""
    words = " ".join(w for w in ("an integer", _bounds(min, max, False, False)) if w)
    return Key(words, lambda v: _is_int(v) and _in_bounds(v, min, max, False, False), doc,
               default)


def number(doc: str = "", *, gt: float | None = None, ge: float | None = None,
           lt: float | None = None, le: float | None = None, default: Any = REQUIRED) -> Key:
    """A finite int or float within the given bounds (``gt``/``ge`` below, ``lt``/``le`` above)."""
    low, low_open = (gt, True) if gt is not None else (ge, False)
    high, high_open = (lt, True) if lt is not None else (le, False)
    words = " ".join(w for w in ("a finite number", _bounds(low, high, low_open, high_open)) if w)
    return Key(words, lambda v: _is_number(v) and math.isfinite(v)
               and _in_bounds(v, low, high, low_open, high_open), doc, default, float)


def fraction(doc: str = "", *, zero_ok: bool = False, default: Any = REQUIRED) -> Key:
    """A number in (0, 1] (``[0, 1]`` with ``zero_ok``)."""
    return number(doc, ge=0.0, le=1.0, default=default) if zero_ok else \
        number(doc, gt=0.0, le=1.0, default=default)


def boolean(doc: str = "", *, default: Any = REQUIRED) -> Key:
    return Key("True or False", lambda v: isinstance(v, bool), doc, default)


def choice(options: tuple, doc: str = "", *, default: Any = REQUIRED) -> Key:
    return Key(f"one of {tuple(options)!r}", lambda v: v in options, doc, default)


def text(doc: str = "", *, default: Any = REQUIRED) -> Key:
    return Key("a string", lambda v: isinstance(v, str), doc, default)


def optional(key: Key) -> Key:
    """``key`` or None."""
    return dataclasses.replace(key, allowed=f"None or {key.allowed}",
                               test=lambda v: v is None or key.test(v),
                               convert=lambda v: None if v is None else key.convert(v))


def sequence(item: Key, doc: str = "", *, min_len: int = 1, distinct: bool = False,
             increasing: bool = False, length: int | None = None,
             default: Any = REQUIRED) -> Key:
    """A list or tuple of values that each pass ``item``; stored as a tuple."""
    size = (f"a sequence of {length} values" if length is not None else
            "a non-empty sequence" if min_len == 1 else f"a sequence of at least {min_len} values")
    words = (f"{size}, each {item.allowed}" + (", distinct" if distinct else "")
             + (", strictly increasing" if increasing else ""))

    def test(v):
        if not isinstance(v, (list, tuple)) or len(v) < min_len:
            return False
        if length is not None and len(v) != length:
            return False
        if not all(item.test(x) for x in v) or (distinct and len(set(v)) != len(v)):
            return False
        return not increasing or all(a < b for a, b in zip(v, v[1:]))

    def detail(v):
        bad = [x for x in v if not item.test(x)] if isinstance(v, (list, tuple)) else []
        return f" ({bad[0]!r} is not)" if bad else ""

    return Key(words, test, doc, default, lambda v: tuple(item.convert(x) for x in v), detail)


class Section:
    """A group of keys (``config.task``, ...). ``keys`` maps names to ``Key`` or ``Section``."""

    def __init__(self, doc: str = "", **keys: "Key | Section"):
        self.doc, self.keys = doc, keys

    def allowed(self) -> list[str]:
        return sorted(self.keys)

    def validate(self, values: Any, where: str) -> dict[str, Any]:
        if not isinstance(values, Mapping) and not hasattr(values, "to_dict"):
            raise ConfigError(f"{where}={values!r}: must be a section with keys {self.allowed()}")
        values = values.to_dict() if hasattr(values, "to_dict") else dict(values)
        unknown = sorted(set(values) - set(self.keys))
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}; allowed: {self.allowed()}")
        missing = sorted(k for k, key in self.keys.items() if k not in values
                         and not isinstance(key, Section) and key.default is REQUIRED)
        if missing:
            raise ConfigError(f"{where}: missing keys {missing}; allowed: {self.allowed()}")
        out = {}
        for name, key in self.keys.items():
            path = f"{where}.{name}"
            if isinstance(key, Section):
                out[name] = key.validate(values.get(name, {}), path)
            elif name in values:
                out[name] = key.check(path, values[name])
            else:
                out[name] = key.default
        return out

    def lines(self, prefix: str) -> list[str]:
        out = []
        for name, key in sorted(self.keys.items()):
            if isinstance(key, Section):
                out.append(f"  {prefix}{name}.*: {key.doc}" if key.doc else f"  {prefix}{name}.*")
                out.extend(key.lines(f"{prefix}{name}."))
            else:
                out.append(f"  {prefix}{name}: {key.describe()}")
        return out


def _type_words(hint: Any) -> str:
    """``Literal['a', 'b']`` as ``one of ('a', 'b')``; other types as written."""
    if typing.get_origin(hint) is typing.Literal:
        return f"one of {typing.get_args(hint)!r}"
    return getattr(hint, "__name__", None) if isinstance(hint, type) else \
        str(hint).replace("typing.", "")


class DataclassSection(Section):
    """A section passed to a frozen dataclass (``ModelConfig``, ``TrainConfig``) that checks its
    own values. ``fixed``: fields the experiment sets itself (not allowed in the config);
    ``only``: the fields this experiment lets the config set (default: all others)."""

    def __init__(self, cls: type, doc: str = "", *, fixed: tuple[str, ...] = (),
                 only: tuple[str, ...] | None = None):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        hints = typing.get_type_hints(cls)
        names = [n for n in (only if only is not None else fields) if n not in fixed]
        keys = {}
        for n in names:
            f = fields[n]
            default = f.default if f.default is not dataclasses.MISSING else REQUIRED
            keys[n] = Key(_type_words(hints[n]), lambda v: True, "", default)
        super().__init__(doc or f"passed to {cls.__name__}, which checks the values", **keys)
        self.cls = cls

    def validate(self, values: Any, where: str) -> dict[str, Any]:
        values = values.to_dict() if hasattr(values, "to_dict") else dict(values)
        unknown = sorted(set(values) - set(self.keys))
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}; allowed: {self.allowed()}")
        return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


class Schema(Section):
    """The whole config of one experiment: ``Schema("quickstart", n_seeds=integer(...), ...)``."""

    def __init__(self, name: str, doc: str = "", **keys: "Key | Section"):
        super().__init__(doc, **keys)
        self.name = name

    def validate(self, config: Any, where: str = "config"):
        """The checked config as a ConfigDict (defaults filled, sequences as tuples);
        raises ConfigError naming the first bad key."""
        import ml_collections
        return ml_collections.ConfigDict(super().validate(config, where))

    def help(self) -> str:
        head = f"{self.name} config file; override any key with --config.<key>=<value>."
        return "\n".join([head, *self.lines("")])

    def key_at(self, path: str) -> "Key | None":
        """The ``Key`` at a dotted ``path`` (``"hparams.lr"``), or None if it is none."""
        node: Key | Section = self
        for part in path.split("."):
            node = node.keys.get(part) if isinstance(node, Section) else None
            if node is None:
                return None
        return node if isinstance(node, Key) else None

    def flag_error(self, argv: list[str], err: Exception) -> str:
        """One line for an override that flag parsing itself refused (``--config.n_seeds=2.5``
        for an int key: absl fails before the schema sees the value): the value and what the
        schema allows there; the parser's own first line when no key of the schema is named."""
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        for arg in argv:
            if arg.startswith("--config.") and "=" in arg:
                path, value = arg[len("--config."):].split("=", 1)
                key = self.key_at(path)
                if key is not None and f"--config.{path}=" in message:
                    return f"--config.{path}={value}: must be {key.allowed}"
        return message.removeprefix("flag ")

    def override_error(self, argv: list[str]) -> str | None:
        """For a failed ``--config.a.b=v`` override: the first path that is no key of the
        schema, as one line listing what is allowed there (None if every path is a key)."""
        for arg in argv:
            if not arg.startswith("--config."):
                continue
            path = arg[len("--config."):].split("=", 1)[0]
            section: Section = self
            done = []
            for part in path.split("."):
                key = section.keys.get(part) if isinstance(section, Section) else None
                if key is None:
                    where = "config." + ".".join(done) if done else "config"
                    allowed = section.allowed() if isinstance(section, Section) else []
                    if not isinstance(section, Section):
                        return f"--config.{path}: config.{'.'.join(done)} is a value, not a section"
                    return f"--config.{path}: {where} has no key {part!r}; allowed: {allowed}"
                done.append(part)
                section = key
        return None


# ---- keys every sweep experiment shares -----------------------------------------------------
SEEDS = {
    "n_seeds": integer("models trained, one per seed"),
    "seed_offset": integer("first seed", min=0, default=0),
}

HPARAMS = {
    "lr": number("peak learning rate", gt=0.0),
    "weight_decay": number("AdamW decoupled weight decay", ge=0.0),
    "init_scale": number("multiplies the initial weights", gt=0.0),
}


def hparams(*names: str, doc: str = "traced hyperparameters, the same for every seed") -> Section:
    """The ``hparams`` section with the given shared keys (``HPARAMS``)."""
    return Section(doc, **{n: HPARAMS[n] for n in names})
