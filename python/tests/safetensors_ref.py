"""An independent safetensors reader and writer for the tests (the format's spec, json
and struct only; none of foxhunt's code): checks that what the package writes is what it
says, and writes files foxhunt's writer would refuse to (names it must refuse to read)."""

from __future__ import annotations

import json
import struct

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8", "U64": "<u8", "U8": "u1"}


def parse(path) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
    """(tensors, metadata, tensor names in header order) of a safetensors file."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, entry in header.items():
        b, e = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[base + b:base + e],
                                      dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return tensors, meta, list(header)


def write(path, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """tensors (any names, in order; F32 only) and metadata as a safetensors file."""
    header: dict = {"__metadata__": metadata} if metadata else {}
    at = 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, "<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [at, at + a.nbytes]}
        at += a.nbytes
    text = json.dumps(header).encode()  # a NUL in a name is written \u0000
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, "<f4").tobytes())
