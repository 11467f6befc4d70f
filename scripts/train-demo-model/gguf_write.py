"""A minimal GGUF v3 writer: metadata key/values and F32 / F16 tensors (ggml types 0 and 1).

Layout (GGUF v3, little-endian): magic "GGUF", version 3, tensor count (u64), key/value count
(u64), the key/values, the tensor infos (name, n_dims, dims innermost first, type, offset), then
the tensor data, each tensor aligned to general.alignment (32) from the start of the data section.
"""
import struct

import numpy as np

ALIGNMENT = 32
# GGUF metadata value types.
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16 = 0, 1


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class GgufWriter:
    def __init__(self):
        self.kv = []
        self.tensors = []

    def add_u32(self, key, v):
        self.kv.append(_str(key) + struct.pack("<II", U32, v))

    def add_f32(self, key, v):
        self.kv.append(_str(key) + struct.pack("<If", F32, v))

    def add_bool(self, key, v):
        self.kv.append(_str(key) + struct.pack("<I?", BOOL, v))

    def add_string(self, key, v):
        self.kv.append(_str(key) + struct.pack("<I", STRING) + _str(v))

    def add_array(self, key, elem_type, values):
        body = struct.pack("<IIQ", ARRAY, elem_type, len(values))
        if elem_type == STRING:
            body += b"".join(_str(v) for v in values)
        elif elem_type == F32:
            body += struct.pack(f"<{len(values)}f", *values)
        elif elem_type == I32:
            body += struct.pack(f"<{len(values)}i", *values)
        else:
            raise ValueError(f"array element type {elem_type}")
        self.kv.append(_str(key) + body)

    def add_tensor(self, name, array, f16=False):
        """array: numpy, shape (rows, cols) as PyTorch stores a Linear weight (out, in); GGUF dims
        are innermost first, so (cols, rows)."""
        a = np.ascontiguousarray(array, dtype=np.float16 if f16 else np.float32)
        self.tensors.append((name, a, GGML_F16 if f16 else GGML_F32))

    def write(self, path):
        infos, blobs, offset = [], [], 0
        for name, a, ggml_type in self.tensors:
            dims = list(reversed(a.shape))
            infos.append(_str(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) +
                         struct.pack("<IQ", ggml_type, offset))
            data = a.tobytes()
            pad = (-len(data)) % ALIGNMENT
            blobs.append(data + b"\0" * pad)
            offset += len(data) + pad
        head = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv)) + b"".join(self.kv) + b"".join(infos)
        head += b"\0" * ((-len(head)) % ALIGNMENT)
        with open(path, "wb") as f:
            f.write(head)
            for b in blobs:
                f.write(b)
