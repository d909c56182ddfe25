#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora: a few small valid files per target (standard library only).

    python3 fuzz/make_corpus.py        (from the repository root)
"""
import gzip
import json
import os
import struct
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw little-endian bytes), already in file order."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def idx(code, fmt, sizes, values):
    return (struct.pack(">BBBB", 0, 0, code, len(sizes)) + struct.pack(">%dI" % len(sizes), *sizes)
            + struct.pack(">%d%s" % (len(values), fmt), *values))


def main():
    write("safetensors", "empty", safetensors([]))
    write("safetensors", "metadata_only", safetensors([], {"format": "pt"}))
    write("safetensors", "one_f32", safetensors([("w", "F32", [2, 3], struct.pack("<6f", *range(6)))]))
    write("safetensors", "mixed", safetensors([
        ("step", "I64", [], struct.pack("<q", 7)),
        ("b", "F64", [2], struct.pack("<2d", 0.5, -1.0)),
        ("w", "F32", [1, 2], struct.pack("<2f", 1.0, 2.0)),
        ("bf", "BF16", [1], struct.pack("<H", 0x3F80)),
        ("h", "F16", [2], struct.pack("<2H", 0x3C00, 0x8001)),
        ("mask", "BOOL", [3], bytes([1, 0, 1])),
        ("none", "BOOL", [0, 4], b""),
    ], {"epoch": "3", "note": "seed"}))
    fixture = os.path.join(ROOT, "..", "..", "tests", "fixtures", "torch_written.safetensors")
    with open(fixture, "rb") as f:
        write("safetensors", "torch_written", f.read())

    # pickle: the data.pkl of each checkpoint torch.save wrote for the tests (fuzz_pickle wraps a
    # non-zip input as a checkpoint's data.pkl with one 64-byte storage, data/0), and two whole
    # checkpoints.
    fixtures = os.path.join(ROOT, "..", "..", "tests", "fixtures", "pickle")
    for stem in ("state_dict", "dtypes", "edge", "nested"):
        with zipfile.ZipFile(os.path.join(fixtures, stem + ".pt")) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            write("pickle", stem + ".pkl", z.read(pkl))
    for stem in ("state_dict", "edge", "legacy"):
        with open(os.path.join(fixtures, stem + ".pt"), "rb") as f:
            write("pickle", stem + ".pt", f.read())
    # LibTorch's archives (TorchScript objects), whole and as their data.pkl.
    libtorch = os.path.join(ROOT, "..", "..", "tests", "fixtures", "libtorch")
    for stem in ("module", "adam"):
        with open(os.path.join(libtorch, stem + ".pt"), "rb") as f:
            write("pickle", "libtorch_" + stem + ".pt", f.read())
        with zipfile.ZipFile(os.path.join(libtorch, stem + ".pt")) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            write("pickle", "libtorch_" + stem + ".pkl", z.read(pkl))

    write("idx", "u8_labels", idx(0x08, "B", [5], [0, 1, 2, 9, 255]))
    write("idx", "u8_images", idx(0x08, "B", [2, 3, 3], list(range(18))))
    write("idx", "i8", idx(0x09, "b", [4], [-128, -1, 0, 127]))
    write("idx", "i16", idx(0x0B, "h", [2, 2], [-32768, -1, 1, 32767]))
    write("idx", "i32", idx(0x0C, "i", [3], [-2 ** 31, 0, 2 ** 31 - 1]))
    write("idx", "f32", idx(0x0D, "f", [2], [1.5, -0.25]))
    write("idx", "f64", idx(0x0E, "d", [1, 2], [0.1, 1e300]))
    write("idx", "scalar", idx(0x08, "B", [], [42]))
    write("idx", "u8_images.gz", gzip.compress(idx(0x08, "B", [2, 3, 3], list(range(18))), mtime=0))
    write("idx", "f64.gz", gzip.compress(idx(0x0E, "d", [1, 2], [0.1, 1e300]), mtime=0))


if __name__ == "__main__":
    main()
