"""JSON files: read completely, the top level of the expected type, every required key there
with a value of the expected type. A key a stored file must have gets no silent default."""
from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from typing import Any, Mapping

from mechjax.filecheck.errors import FileError
from mechjax.filecheck.files import require_file

_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer",
               float: "a number", bool: "true or false", type(None): "null"}


def read_json(path: str, what: str = "JSON file", error: type[FileError] = FileError,
              top: type = dict) -> Any:
    """The JSON value in ``path``, after checking that it parses to its end and is a ``top``."""
    require_file(path, what, error)
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise error(f"{what} {path!r} is not valid JSON (truncated or corrupt?): {err}") from err
    if top is not None and not isinstance(value, top):
        raise error(f"{what} {path!r} holds a JSON {type(value).__name__}; expected "
                    f"{_describe(top)}")
    return value


def _describe(hint: Any) -> str:
    if isinstance(hint, tuple):
        return " or ".join(_describe(h) for h in hint)
    return _JSON_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


def _is_instance(value: Any, kind: Any) -> bool:
    """``value`` is of JSON type ``kind`` (a type or a tuple of them); an integer is a number,
    a boolean is not an integer."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, tuple(k for k in kinds if k is not bool))


def require(doc: Mapping[str, Any], key: str, kind: Any, path: str,
            error: type[FileError] = FileError, expected: str | None = None) -> Any:
    """``doc[key]``, after checking that it is there and of JSON type ``kind``; ``expected``
    describes the value in the message (default: the type)."""
    what = expected or _describe(kind)
    if key not in doc:
        raise error(f"{path!r}: key {key!r} is missing; expected {what}")
    value = doc[key]
    if not _is_instance(value, kind):
        raise error(f"{path!r}: key {key!r} is {_describe(type(value))} ({_short(value)}); "
                    f"expected {what}")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_fields(doc: Mapping[str, Any], spec: Mapping[str, Any], path: str,
                 error: type[FileError] = FileError) -> None:
    """Every key of ``spec`` (``{key: JSON type or tuple of types}``) is in ``doc`` with a value
    of that type; missing keys are named all at once."""
    missing = sorted(set(spec) - set(doc))
    if missing:
        raise error(f"{path!r}: missing keys {missing}; a stored file must have every one of "
                    f"{sorted(spec)}")
    for key, kind in spec.items():
        require(doc, key, kind, path, error)


def _json_kind(hint: Any) -> Any:
    """The JSON types a dataclass field's type hint allows (``int | None`` -> ``(int, None)``);
    None where the hint is not one this checker knows (any value passes)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        parts = [_json_kind(a) for a in typing.get_args(hint)]
        if any(p is None for p in parts):
            return None
        return tuple(t for p in parts for t in (p if isinstance(p, tuple) else (p,)))
    if origin is typing.Literal:  # the dataclass checks the value itself
        kinds = tuple(sorted({type(a) for a in typing.get_args(hint)}, key=str))
        return kinds[0] if len(kinds) == 1 else kinds
    if hint is type(None):
        return type(None)
    if origin in (tuple, list) or hint in (tuple, list):
        return list
    if hint in (int, float, str, bool):
        return hint
    return None


@functools.lru_cache(maxsize=None)
def _dataclass_spec(cls: type) -> dict[str, Any]:
    """``{field: JSON kinds or None}`` (resolving type hints is slow; a class's never change)."""
    hints = typing.get_type_hints(cls)
    return {f.name: _json_kind(hints[f.name]) for f in dataclasses.fields(cls)}


def check_dataclass_fields(doc: Mapping[str, Any], cls: type, path: str,
                           error: type[FileError] = FileError) -> None:
    """``doc`` (a stored ``dataclasses.asdict(cls(...))``) has every field of ``cls``, no other
    key, and each value of the field's type. The dataclass's own checks then judge the values."""
    spec = _dataclass_spec(cls)
    names = list(spec)
    unknown = sorted(set(doc) - set(names))
    if unknown:
        raise error(f"{path!r}: unknown keys {unknown}; allowed: {sorted(names)}")
    check_fields(doc, {n: k for n, k in spec.items() if k is not None}, path, error)
    missing = sorted(n for n, k in spec.items() if k is None and n not in doc)
    if missing:
        raise error(f"{path!r}: missing keys {missing}; a stored file must have every one of "
                    f"{sorted(names)}")
