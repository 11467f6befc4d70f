#!/usr/bin/env python3
"""Compares the tensor data of two GGUF files tensor by tensor (same names, types and shapes
expected): prints, per tensor, whether the bytes are identical and the share of differing bytes.
Used by scripts/imatrix-vs-llamacpp.sh; standard library only.

    gguf-tensor-diff.py A.gguf B.gguf [--json]
"""
import json
import struct
import sys

# ggml type -> (block elements, block bytes) for the types the comparison meets.
BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
         12: (256, 144), 13: (256, 176), 14: (256, 210), 30: (1, 2)}


def read(path):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            at, n = take("I"), take("Q")
            return [value(at) for _ in range(n)]
        return take(scalar[t])

    assert data[:4] == b"GGUF", path
    pos = 4
    take("I")
    n_tensors, n_kv = take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        t, off = take("I"), take("Q")
        infos.append((name, ne, t, off))
    align = kv.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    out = {}
    for name, ne, t, off in infos:
        n = 1
        for d in ne:
            n *= d
        be, bb = BLOCK[t]
        out[name] = (t, ne, data[base + off:base + off + n // be * bb])
    return out


def main():
    a, b = read(sys.argv[1]), read(sys.argv[2])
    rows, same = [], 0
    for name, (ta, nea, da) in a.items():
        tb, neb, db = b[name]
        diff = sum(x != y for x, y in zip(da, db)) if (ta, nea) == (tb, neb) else len(da)
        rows.append({"tensor": name, "type_a": ta, "type_b": tb, "bytes": len(da), "differing_bytes": diff})
        same += diff == 0
    if "--json" in sys.argv:
        print(json.dumps({"tensors": rows, "identical": same, "of": len(rows)}))
        return
    for r in rows:
        print(f"{r['tensor']:32} types {r['type_a']:>2}/{r['type_b']:>2} {r['bytes']:>9} bytes, "
              f"{r['differing_bytes']:>7} differ ({100.0 * r['differing_bytes'] / max(1, r['bytes']):.4f} %)")
    print(f"{same} of {len(rows)} tensors identical")


main()
