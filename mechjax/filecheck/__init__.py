"""One validator for every file mechjax reads: each reader goes through it before it computes or
writes anything, and a broken file ends in one line naming the file, the key or tensor, and what
was expected (``FileError``), never in a plausible number.

* ``errors``: ``FileError`` and the error of each kind of file (weights, checkpoint folders, runs).
* ``files``: a file that exists and opens completely (``.npz`` archives read to their end).
* ``npz_stored``: the one-pass reader of the archives mechjax writes (``np.load`` for others).
* ``arrays``: a state dict's keys, shapes, dtypes and finite floating entries.
* ``documents``: a JSON file's top-level type, its required keys and their types (a dataclass's
  fields give the keys a stored config must have: no silent default).
"""
from mechjax.filecheck.arrays import (check_finite, check_floating, check_keys, check_params,
                                     check_shapes, nonfinite_rows, surely_finite)
from mechjax.filecheck.documents import (check_dataclass_fields, check_fields, read_json,
                                        require)
from mechjax.filecheck.errors import CheckpointError, FileError, RunError, WeightsError
from mechjax.filecheck.files import read_cached, read_npz, require_file

__all__ = ["CheckpointError", "FileError", "RunError", "WeightsError", "check_dataclass_fields",
           "check_fields", "check_finite", "check_floating", "check_keys", "check_params",
           "check_shapes", "nonfinite_rows", "read_cached", "read_json", "read_npz", "require",
           "require_file", "surely_finite"]
