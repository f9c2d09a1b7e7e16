"""Interoperability of arr's .npy/.npz files with the real NumPy.

    check_numpy.py write DIR   NumPy writes files that arr's test then loads
    check_numpy.py read DIR    NumPy loads the files arr's test wrote, checking
                               exact values, dtypes and shapes

Run by stdlib/tests/io.rs; the expected values here and there must agree.
"""

import os
import sys

import numpy as np


def write(d):
    j = lambda name: os.path.join(d, name)
    np.save(j("f32.npy"), np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.5) - np.float32(1))
    np.save(j("f64.npy"), np.array([[1.5, -2.25], [1e300, np.pi]], dtype=np.float64))
    np.save(j("i32.npy"), np.arange(-5, 5, dtype=np.int32).reshape(2, 5))
    np.save(j("i64.npy"), np.array([2**40, -(2**40), 7], dtype=np.int64))
    np.save(j("u32.npy"), np.array([0, 4000000000, 7], dtype=np.uint32))
    np.save(j("bool.npy"), np.array([[True, False, True]]))
    np.save(j("scalar.npy"), np.float32(3.5))
    np.save(j("empty.npy"), np.zeros((0, 3), dtype=np.float32))
    # Column-major data: arr must transpose it back.
    np.save(j("fortran.npy"), np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)))
    # Big-endian data: arr must byte-swap it.
    np.save(j("big_f4.npy"), np.arange(6, dtype=">f4").reshape(2, 3) + np.float32(0.25))
    np.save(j("big_i8.npy"), np.array([1, -2, 2**50], dtype=">i8"))
    # Types arr converts to the nearest one it has.
    np.save(j("u1.npy"), np.array([0, 200, 255], dtype=np.uint8))
    np.save(j("i1.npy"), np.array([-128, 0, 127], dtype=np.int8))
    np.save(j("i2.npy"), np.array([-30000, 1, 30000], dtype=np.int16))
    np.save(j("u2.npy"), np.array([0, 65535], dtype=np.uint16))
    np.save(j("f2.npy"), np.array([0.5, -2.0, 65504.0, 6.1035156e-05, 5.9604645e-08], dtype=np.float16))
    np.save(j("u8.npy"), np.array([1, 2**40], dtype=np.uint64))
    np.savez(j("z.npz"), np.arange(3, dtype=np.int64), b=np.eye(2, dtype=np.float64))
    np.savez_compressed(j("zc.npz"), a=np.arange(100, dtype=np.float32) / np.float32(3), flags=np.array([True, False]))
    print(f"numpy {np.__version__} wrote {len(os.listdir(d))} files")


def check(got, want):
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert np.array_equal(got, want), f"values {got} != {want}"


def read(d):
    j = lambda name: os.path.join(d, name)
    expected = {
        "f32.npy": np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(0.5) - np.float32(1),
        "f64.npy": np.array([0.1, -2.5, 1e300, np.pi], dtype=np.float64),
        "i32.npy": np.arange(8, dtype=np.int32).reshape(2, 2, 2) - np.int32(4),
        "i64.npy": np.array([2**40, -3], dtype=np.int64),
        "u32.npy": np.array([0, 4000000000, 7], dtype=np.uint32),
        "bool.npy": np.array([True, False, True, True]),
        "scalar.npy": np.array(2.5, dtype=np.float32),
        "empty.npy": np.zeros((0, 3), dtype=np.float32),
        "list.npy": np.array([1, 2, 3], dtype=np.int32),
    }
    for name, want in expected.items():
        path = j(name)
        with open(path, "rb") as f:
            raw = f.read()
        assert raw[:8] == b"\x93NUMPY\x01\x00", f"{name}: not NPY 1.0"
        header_len = int.from_bytes(raw[8:10], "little")
        assert (10 + header_len) % 64 == 0, f"{name}: data not 64-byte aligned"
        try:
            check(np.load(path), want)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    with np.load(j("z.npz")) as z:
        assert sorted(z.files) == ["arr_0", "w"], z.files
        check(z["arr_0"], np.array([1, 2, 3], dtype=np.int32))
        check(z["w"], np.array([[1, 2], [3, 4]], dtype=np.float32))
    with np.load(j("zc.npz")) as z:
        assert sorted(z.files) == ["flags", "x"], z.files
        check(z["x"], np.arange(100, dtype=np.float64) / 3)
        check(z["flags"], np.array([True, False, False, True]))
    print(f"numpy {np.__version__} read {len(expected) + 2} files written by arr: ok")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read"):
        sys.exit(__doc__)
    (write if sys.argv[1] == "write" else read)(sys.argv[2])
