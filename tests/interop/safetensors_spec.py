"""A safetensors reader and writer written from the format's specification, with only the standard
library and NumPy, to check tensor.h's files against (tests/test_files.c runs it).

  safetensors_spec.py make FILE    writes FILE with the tensors of expected() and metadata
  safetensors_spec.py check FILE   reads FILE strictly and compares it with expected()

The specification: an 8-byte little-endian unsigned header size N; N bytes of UTF-8 JSON, an object
mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end)} (offsets into the byte
buffer that follows), plus an optional "__metadata__" object of strings; then the buffer, which the
tensors cover exactly. Data is little-endian, row-major."""
import json
import struct
import sys

import numpy as np

# dtype name -> (numpy dtype of the stored bits, element size)
DTYPES = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2),
          "I64": ("<i8", 8), "I32": ("<i4", 4), "U8": ("u1", 1), "BOOL": ("u1", 1)}
SHAPE = (3, 4)
METADATA = {"format": "pt", "written by": "safetensors_spec.py"}


def expected():
    """The tensors both sides agree on, as (name, dtype, array of stored bits)."""
    i = np.arange(12).reshape(SHAPE)
    f = (i - 5) * 0.25                       # exact in every float type
    bf16 = (f.astype("<f4").view("<u4") >> 16).astype("<u2")  # exact: the low half is zero
    return [
        ("F64", "F64", f.astype("<f8")),
        ("F32", "F32", f.astype("<f4")),
        ("F16", "F16", f.astype("<f2")),
        ("BF16", "BF16", bf16),
        ("I64", "I64", (i * (1 << 40) - 3).astype("<i8")),
        ("I32", "I32", (i * 7 - 20).astype("<i4")),
        ("U8", "U8", ((i * 37) % 256).astype("u1")),
        ("BOOL", "BOOL", (i % 3 == 0).astype("u1")),
        ("scalar", "F32", np.array(-1.5, dtype="<f4")),
        ("empty", "I32", np.zeros((0, 2), dtype="<i4")),
    ]


def make(path):
    header, blobs, at = {"__metadata__": METADATA}, [], 0
    for name, dt, a in expected():
        b = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def fail(msg):
    print("safetensors_spec.py check: " + msg)
    sys.exit(1)


def check(path):
    data = open(path, "rb").read()
    if len(data) < 8:
        fail("shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        fail("header size %d runs past the file" % n)
    if (8 + n) % 8:
        fail("the buffer does not start at a multiple of 8 (header not padded)")
    text = data[8:8 + n].decode("utf-8")  # raises on invalid UTF-8
    if not text.startswith("{"):
        fail("header does not start with '{'")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            fail("duplicate keys in the header")
        return dict(pairs)

    header = json.loads(text, object_pairs_hook=no_duplicates)
    meta = header.pop("__metadata__", {})
    if meta != METADATA:
        fail("metadata %r, expected %r" % (meta, METADATA))
    buf = data[8 + n:]
    spans = sorted((info["data_offsets"][0], info["data_offsets"][1], name) for name, info in header.items())
    at = 0
    for begin, end, name in spans:
        if begin != at:
            fail("tensor %s starts at %d, the previous ends at %d" % (name, begin, at))
        at = end
    if at != len(buf):
        fail("tensors cover %d bytes, the buffer has %d" % (at, len(buf)))
    want = expected()
    if list(header) != [name for name, _, _ in want]:
        fail("names %r, expected %r in that order" % (list(header), [w[0] for w in want]))
    for name, dt, a in want:
        info = header[name]
        if set(info) != {"dtype", "shape", "data_offsets"}:
            fail("%s: keys %r" % (name, sorted(info)))
        if info["dtype"] != dt or tuple(info["shape"]) != a.shape:
            fail("%s: %s %r, expected %s %r" % (name, info["dtype"], info["shape"], dt, a.shape))
        begin, end = info["data_offsets"]
        npdt, size = DTYPES[dt]
        if end - begin != a.size * size:
            fail("%s: %d bytes for %d elements" % (name, end - begin, a.size))
        if begin % size:
            fail("%s: not aligned to its element size (offset %d)" % (name, begin))
        got = np.frombuffer(buf[begin:end], dtype=npdt).reshape(a.shape)
        if got.tobytes() != np.ascontiguousarray(a).astype(npdt).tobytes():
            fail("%s: values differ:\n%r\nexpected\n%r" % (name, got, a))
    print("safetensors_spec.py check: ok, %d tensors" % len(want))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        sys.exit(__doc__)
    (make if sys.argv[1] == "make" else check)(sys.argv[2])
