"""An independent safetensors reader for the tests (the format's spec, json and struct
only; none of foxhunt's code): checks that what the package writes is what it says."""

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
