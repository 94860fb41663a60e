"""Reading the ``.npz`` archives mechjax writes (``np.savez``: every member a stored, not
compressed, ``.npy`` of a plain numeric dtype in C order) in one pass per member: the array is
allocated once, the member's bytes are read straight into it and their CRC-32 is checked against
the archive's. ``np.load`` reads the same bytes in chunks through ``zipfile``, checks the same
CRC, parses each header with ``ast.literal_eval`` and copies the data again: about 1.5x the time
on a run's snapshots, which is what lets validation cost nothing net when a run is opened (see
docs/design.md, "Every file read is validated"). Any archive outside that pattern (compressed,
Fortran order, structured, bfloat16, a non-``.npy`` member, a repeated name) returns ``None`` and
the caller uses ``np.load``: this module is a fast path, never a second definition of the
format."""
from __future__ import annotations

import re
import struct
import zipfile
import zlib
from typing import BinaryIO

import numpy as np

_MAGIC = b"\x93NUMPY"
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name and extra field
# The header numpy writes for a plain array: its dtype (bool, integer, unsigned, floating),
# C order, the shape; padded with spaces and a newline.
_HEADER = re.compile(r"\{'descr': '([<>|=][biuf]\d+)', 'fortran_order': False, "
                     r"'shape': \(((?:\d+, )*\d+,?|)\), \}\s*\Z")


def read_stored_npz(path: str) -> dict[str, np.ndarray] | None:
    """Every array of the archive at ``path`` (``{name: array}``, names without ``.npy``), or
    ``None`` when the archive is not of the plain pattern above. A damaged member raises what
    ``zipfile`` / ``np.load`` raise for it (``zipfile.BadZipFile`` for a CRC or size mismatch,
    ``EOFError`` for a short read)."""
    with open(path, "rb") as f:
        archive = zipfile.ZipFile(f)
        infos = archive.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names) or not all(n.endswith(".npy") for n in names):
            return None
        out = {}
        for info in infos:
            array = _read_member(f, info)
            if array is None:
                return None
            out[info.filename[:-len(".npy")]] = array
        return out


def _read_member(f: BinaryIO, info: zipfile.ZipInfo) -> np.ndarray | None:
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:  # compressed, encrypted
        return None
    f.seek(info.header_offset)
    local = f.read(_LOCAL_HEADER)
    if len(local) != _LOCAL_HEADER or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for member {info.filename!r}")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    f.seek(info.header_offset + _LOCAL_HEADER + name_len + extra_len)
    preamble = f.read(10)
    if len(preamble) != 10 or preamble[:6] != _MAGIC or preamble[6] not in (1, 2, 3):
        return None
    if preamble[6] == 1:
        header_len = struct.unpack("<H", preamble[8:10])[0]
    else:  # versions 2 and 3: a 4-byte header length
        preamble += f.read(2)
        header_len = struct.unpack("<I", preamble[8:12])[0]
    header = f.read(header_len)
    match = _HEADER.match(header.decode("latin1"))
    if len(header) != header_len or match is None:
        return None
    shape = tuple(int(s) for s in match.group(2).split(",") if s.strip())
    array = np.empty(shape, np.dtype(match.group(1)))
    if len(preamble) + header_len + array.nbytes != info.file_size:
        raise zipfile.BadZipFile(f"member {info.filename!r}: {info.file_size} bytes stored, "
                                 f"the header says {len(preamble) + header_len + array.nbytes}")
    data = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
    if array.size and f.readinto(data) != array.nbytes:
        raise EOFError(f"member {info.filename!r} ends before its {array.nbytes} bytes")
    if zlib.crc32(data, zlib.crc32(header, zlib.crc32(preamble))) != info.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
    return array
