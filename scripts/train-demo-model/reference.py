#!/usr/bin/env python3
"""Greedy continuations of the demo model computed by PyTorch from the GGUF file itself: the
independent reference tests/tools/test_demo_model.cpp holds EdgeLLM to (the same ids, token for
token; the prompt's ids from spm_bpe.py's encoder, which training used).

  python3 reference.py ../../assets/models/tinytales.gguf > ../../assets/models/tinytales-greedy.jsonl

One JSON line per prompt: {"prompt", "prompt_ids" (BOS first), "output_ids", "output_text"};
at most 100 tokens, ending early at EOS (not included).
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm_bpe  # noqa: E402
import train  # noqa: E402

PROMPTS = ["Once upon a time,", "One day, Lily", "Tom and his dog", "The sun was shining.",
           "\"Where is my ball?\" asked"]


def read_gguf(path):
    d = open(path, "rb").read()
    o = 4
    def rd(fmt):
        nonlocal o
        v = struct.unpack_from("<" + fmt, d, o)
        o += struct.calcsize("<" + fmt)
        return v[0]
    def rs():
        nonlocal o
        n = rd("Q")
        s = d[o:o + n].decode("utf-8")
        o += n
        return s
    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def rv(t):
        if t == 8:
            return rs()
        if t == 9:
            at, n = rd("I"), rd("Q")
            return [rv(at) for _ in range(n)]
        return rd(scalar[t])
    version, n_tensors, n_kv = rd("I"), rd("Q"), rd("Q")
    assert version == 3
    kv = {}
    for _ in range(n_kv):
        k = rs()
        kv[k] = rv(rd("I"))
    infos = []
    for _ in range(n_tensors):
        name = rs()
        dims = [rd("Q") for _ in range(rd("I"))]
        infos.append((name, dims, rd("I"), rd("Q")))
    align = kv.get("general.alignment", 32)
    base = (o + align - 1) // align * align
    tensors = {}
    for name, dims, ggml_type, off in infos:
        assert ggml_type == 0, f"{name}: only F32 is read here"
        n = int(np.prod(dims))
        a = np.frombuffer(d, dtype=np.float32, count=n, offset=base + off)
        tensors[name] = a.reshape(list(reversed(dims))).copy()
    return kv, tensors


def main():
    kv, t = read_gguf(sys.argv[1])
    cfg = train.Config()
    assert kv["llama.embedding_length"] == cfg.dim and kv["llama.block_count"] == cfg.n_layers
    model = train.Llama(cfg)
    sd = {"embed.weight": t["token_embd.weight"], "norm.weight": t["output_norm.weight"]}
    for i in range(cfg.n_layers):
        for ours, theirs in [("attn_norm", "attn_norm.weight"), ("attn_q", "wq.weight"), ("attn_k", "wk.weight"),
                             ("attn_v", "wv.weight"), ("attn_output", "wo.weight"), ("ffn_norm", "ffn_norm.weight"),
                             ("ffn_gate", "w_gate.weight"), ("ffn_up", "w_up.weight"), ("ffn_down", "w_down.weight")]:
            sd[f"blocks.{i}.{theirs}"] = t[f"blk.{i}.{ours}.weight"]
    model.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    model.eval()
    vocab = spm_bpe.Vocab(kv["tokenizer.ggml.tokens"][spm_bpe.N_SPECIAL + spm_bpe.N_BYTES:])
    assert vocab.tokens == kv["tokenizer.ggml.tokens"]
    torch.set_num_threads(1)
    model.double()
    with torch.no_grad():
        for p in PROMPTS:
            ids = [spm_bpe.BOS] + vocab.encode(p)
            out = []
            for _ in range(100):
                # float64 for the reference: a near-tie is decided by the model, not by rounding.
                nxt = int(model(torch.tensor([ids + out]))[0, -1].argmax())
                if nxt == spm_bpe.EOS:
                    break
                out.append(nxt)
            print(json.dumps({"prompt": p, "prompt_ids": ids, "output_ids": out, "output_text": vocab.decode(out, sequence_start=False)}))


if __name__ == "__main__":
    main()
