"""Arrays of a loaded file checked against what the reader expects: keys, shapes, dtypes, and
floating entries that are finite. Each check raises ``error`` with one line naming ``source`` (the
file) and the offending keys or tensor."""
from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np

from mechjax.filecheck.errors import FileError

_SHOWN = 6  # names listed in a message before it says how many more


def _names(names: list[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return f"{names[:_SHOWN]}{more}"


def check_keys(arrays: Mapping[str, object], expected: Iterable[str], source: str,
               error: type[FileError] = FileError, what: str = "keys") -> None:
    """Every name of ``expected`` is in ``arrays``."""
    missing = sorted(set(expected) - set(arrays))
    if missing:
        raise error(f"{source}: missing {what} {_names(missing)}")


def check_shapes(arrays: Mapping[str, np.ndarray], expected: Mapping[str, tuple[int, ...]],
                 source: str, error: type[FileError] = FileError) -> None:
    """Each array named in ``expected`` (and present) has exactly that shape."""
    wrong = [f"{k}: file {tuple(arrays[k].shape)} vs expected {tuple(v)}"
             for k, v in sorted(expected.items())
             if k in arrays and tuple(arrays[k].shape) != tuple(v)]
    if wrong:
        raise error(f"{source}: shape mismatches [{'; '.join(wrong[:_SHOWN])}]")


def check_floating(arrays: Mapping[str, np.ndarray], names: Iterable[str], source: str,
                   error: type[FileError] = FileError) -> None:
    """Each array of ``names`` holds real floating-point numbers (float16/32/64)."""
    wrong = [f"{k}: {arrays[k].dtype}" for k in sorted(names)
             if k in arrays and not is_floating(arrays[k])]
    if wrong:
        raise error(f"{source}: tensors of a non-floating dtype [{'; '.join(wrong[:_SHOWN])}]; "
                    "expected float16, float32 or float64")


def is_floating(x: np.ndarray) -> bool:
    """``x`` holds real floating-point numbers (the kind ``np.floating`` covers; a cheap test)."""
    return x.dtype.kind == "f"


def _ml_float(dtype: np.dtype) -> bool:
    """bfloat16 and float8_* (ml_dtypes), which numpy sees as kind 'V'."""
    return dtype.kind == "V" and dtype.name.startswith(("bfloat", "float"))


def surely_finite(x: np.ndarray) -> bool:
    """True only if every entry of ``x`` is finite; False means "maybe not" (test exactly).
    One BLAS pass: x . x is NaN or inf when any entry is (squares are never negative, so no
    inf - inf), at about memory bandwidth; finite entries whose squares overflow (|x| > 1e19)
    also give False, so a caller falls back to the elementwise test, never to an error."""
    with np.errstate(over="ignore", invalid="ignore"):
        return surely_finite_unguarded(x)


def surely_finite_unguarded(x: np.ndarray) -> bool:
    """``surely_finite`` for a caller that holds ``np.errstate(over="ignore",
    invalid="ignore")`` around many tensors (entering it per tensor costs more than the test)."""
    if _ml_float(x.dtype):  # numpy's dot does not take them; float32 holds every value
        x = x.astype(np.float32)
    if x.dtype.kind != "f" or x.size == 0:
        return True
    flat = x.reshape(-1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(-1)
    return math.isfinite(np.dot(flat, flat))


def _all_finite(x: np.ndarray) -> bool:
    return surely_finite(x) or bool(np.isfinite(x).all())  # the exact test only if needed


def check_finite(arrays: Mapping[str, np.ndarray], source: str,
                 error: type[FileError] = FileError, names: Iterable[str] | None = None) -> None:
    """Every floating array (of ``names``, default all) is finite; the error names the first
    tensor that is not and how many of its entries are NaN or infinite."""
    names = sorted(arrays if names is None else names)
    with np.errstate(over="ignore", invalid="ignore"):  # once: per tensor it costs more
        suspects = [k for k in names if not surely_finite_unguarded(np.asarray(arrays[k]))]
    bad = [k for k in suspects if not np.isfinite(arrays[k]).all()]  # exact: overflow passes
    if bad:
        x = np.asarray(arrays[bad[0]])
        count = int(np.count_nonzero(~np.isfinite(x)))
        also = f" (also not finite: {_names(bad[1:])})" if bad[1:] else ""
        raise error(f"{source}: tensor {bad[0]!r} has {count} of {x.size} entries that are not "
                    f"finite (NaN or inf){also}; weights must be finite")


def check_params(arrays: Mapping[str, np.ndarray], expected: Mapping[str, tuple[int, ...]],
                 source: str, error: type[FileError] = FileError) -> None:
    """A state dict against ``expected`` (``{name: shape}``): every name there (the file may
    hold more), each of that shape, floating and finite; the first failing check raises, in that
    order."""
    # One pass over the (few) tensors answers the common case; the checks that name what is
    # wrong run only when something is.
    if not all(k in arrays and arrays[k].shape == shape and is_floating(arrays[k])
               for k, shape in expected.items()):
        check_keys(arrays, expected, source, error, what="parameters")
        check_shapes(arrays, expected, source, error)
        check_floating(arrays, expected, source, error)
    check_finite(arrays, source, error, names=expected)


def nonfinite_rows(arrays: Mapping[str, np.ndarray], n_leading: int) -> np.ndarray:
    """``[*leading]`` bool: which index of the first ``n_leading`` axes (e.g. ``[seed, grid]``)
    has a non-finite entry in any floating array (all share those leading axes)."""
    first = next(iter(arrays.values()))
    bad = np.zeros(first.shape[:n_leading], bool)
    for x in arrays.values():
        if is_floating(x) and not _all_finite(x):
            bad |= ~np.isfinite(x.reshape(*x.shape[:n_leading], -1)).all(-1)
    return bad
