"""The one-pass ``.npz`` reader: the same arrays as ``np.load`` on every archive it takes, ``None``
(the caller's fallback to ``np.load``) on every archive it does not, and damaged members
refused."""
import zipfile

import ml_dtypes
import numpy as np
import pytest

from mechjax.filecheck import FileError, read_npz
from mechjax.filecheck.npz_stored import read_stored_npz

PLAIN = {
    "scalar": np.float32(3.5),
    "empty": np.zeros((0, 4), np.float32),
    "vector": np.arange(7, dtype=np.int64),
    "matrix": np.random.default_rng(0).normal(size=(3, 5)).astype(np.float16),
    "big_endian": np.arange(6, dtype=">f8").reshape(2, 3),
    "mask": np.array([True, False, True]),
    "bytes": np.arange(256, dtype=np.uint8).reshape(16, 16),
    "stacked": np.random.default_rng(1).normal(size=(2, 1, 4, 3)).astype(np.float32),
    "nan": np.array([np.nan, np.inf, 1.0]),
}


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k])


def test_plain_archives_read_as_np_load_reads_them(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, **PLAIN)
    with np.load(path) as z:
        expected = {k: z[k] for k in z.files}
    got = read_stored_npz(str(path))
    assert got is not None
    _same(got, expected)
    got["vector"][0] = 99  # writable, and its own memory
    assert read_stored_npz(str(path))["vector"][0] == 0


@pytest.mark.parametrize("write", [
    lambda p: np.savez_compressed(p, x=np.ones(3)),
    lambda p: np.savez(p, x=np.asfortranarray(np.ones((3, 2)))),
    lambda p: np.savez(p, x=np.ones(3, ml_dtypes.bfloat16)),
    lambda p: np.savez(p, x=np.zeros(2, [("a", "<f4"), ("b", "<i4")])),
], ids=["compressed", "fortran", "bfloat16", "structured"])
def test_other_archives_are_left_to_np_load_and_read_the_same(tmp_path, write):
    path = tmp_path / "other.npz"
    write(path)
    assert read_stored_npz(str(path)) is None
    with np.load(path) as z:
        expected = {k: z[k] for k in z.files}
    _same(read_npz(str(path)), expected)


def test_a_member_that_is_not_npy_is_left_to_np_load(tmp_path):
    path = tmp_path / "mixed.npz"
    np.savez(path, x=np.ones(2))
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("notes.txt", "hello")
    assert read_stored_npz(str(path)) is None


def _flip_byte_in_member_data(path, member: str) -> None:
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    raw = bytearray(path.read_bytes())
    raw[info.header_offset + 30 + len(info.filename) + 200] ^= 0x40  # inside the data
    path.write_bytes(bytes(raw))


def test_a_changed_byte_fails_its_crc(tmp_path):
    path = tmp_path / "w.npz"
    np.savez(path, w=np.zeros(1000, np.float32), b=np.ones(3, np.float32))
    _flip_byte_in_member_data(path, "w.npy")
    with pytest.raises(zipfile.BadZipFile, match="CRC"):
        read_stored_npz(str(path))
    with pytest.raises(FileError, match="not a readable .npz archive"):
        read_npz(str(path))


def test_a_truncated_archive_is_refused(tmp_path):
    path = tmp_path / "t.npz"
    np.savez(path, w=np.zeros(1000, np.float32))
    path.write_bytes(path.read_bytes()[:-300])
    with pytest.raises(FileError, match="truncated or corrupt"):
        read_npz(str(path))
