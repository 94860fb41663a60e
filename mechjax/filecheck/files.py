"""Files that exist and open completely: a truncated or corrupt file is refused as a whole,
before any of its contents are used."""
from __future__ import annotations

import os
import zipfile
import zlib

import numpy as np

from mechjax.filecheck.errors import FileError
from mechjax.filecheck.npz_stored import read_stored_npz

# What numpy and zipfile raise for a truncated, corrupt or pickled archive member.
_NPZ_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)


def require_file(path: str, what: str, error: type[FileError] = FileError) -> str:
    """``path`` as given, after checking that it is an existing file (``what`` names it)."""
    if not os.path.exists(path):
        raise error(f"{what} {path!r} does not exist")
    if not os.path.isfile(path):
        raise error(f"{what} {path!r} is a folder, not a file")
    return path


def read_npz(path: str, what: str = ".npz file", error: type[FileError] = FileError
             ) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` archive at ``path``, each read to its end (zipfile checks each
    member's CRC as it is read, so a damaged member fails here, not as wrong numbers later).
    Archives as mechjax writes them take the one-pass reader of ``npz_stored``; any other
    goes through ``np.load``, which reads the same arrays."""
    try:
        arrays = read_stored_npz(path)
        if arrays is not None:
            return arrays
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except (FileNotFoundError, IsADirectoryError):
        require_file(path, what, error)  # says which (no stat before a read that succeeds)
        raise
    except _NPZ_READ_ERRORS as err:
        raise error(f"{what} {path!r} is not a readable .npz archive (truncated or corrupt?): "
                    f"{type(err).__name__}: {err}") from err


_READ_CACHE: dict[tuple, object] = {}


def read_cached(path: str, read):
    """``read(path)``, reused while the file is unchanged (same inode, size and modification
    time: a writer replaces files atomically, so a new version is a new inode). For the small
    JSON files a run's accessors read again and again; the value must not be mutated."""
    try:
        st = os.stat(path)
    except OSError:
        return read(path)  # the reader says what is wrong
    # device and inode name the file wherever the working directory is, so no abspath
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, read)
    if key not in _READ_CACHE:
        if len(_READ_CACHE) >= 256:
            _READ_CACHE.clear()
        _READ_CACHE[key] = read(path)
    return _READ_CACHE[key]
