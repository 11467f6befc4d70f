#!/usr/bin/env python3
"""Writes a tiny random BERT checkpoint in Hugging Face layout, for checking `edgellm convert`'s BERT
output against llama.cpp's `llama-embedding` by hand (docs/convert.md, "BERT against llama.cpp").

    scripts/make-hf-bert.py OUT_DIR [--pooling mean|cls] [--seed N]

OUT_DIR gets config.json (BertModel: hidden 64, 2 layers, 4 heads, FFN 128, 128 positions, 2 token
types, layer_norm_eps 1e-12), model.safetensors (F32, BertModel names), vocab.txt (the 30522
WordPiece tokens of shared/testdata/vocab/ggml-vocab-bert-bge.gguf written back from llama.cpp's
phantom-space form: "▁word" -> "word", "ing" -> "##ing", control tokens as they are),
tokenizer_config.json (do_lower_case) and sentence-transformers' modules.json +
1_Pooling/config.json. Needs numpy (Debian: python3-numpy) and llama.cpp's gguf-py (the reference
source of scripts/build-llamacpp-reference.sh: LLAMACPP_REF, default ../llamacpp-ref). Not a test.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bge_vocab(testdata, llamacpp_ref):
    sys.path.insert(0, os.path.join(llamacpp_ref, "src", "gguf-py"))
    import gguf  # noqa: E402 (llama.cpp's reader, from the reference source)
    r = gguf.GGUFReader(os.path.join(testdata, "vocab", "ggml-vocab-bert-bge.gguf"))
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    out = []
    for t, ty in zip(tokens, types):
        if ty == 3:  # control
            out.append(t)
        elif t.startswith("\u2581"):
            out.append(t[1:])
        else:
            out.append("##" + t)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--pooling", default="mean", choices=["mean", "cls"])
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    testdata = os.path.join(os.environ.get("EDGELLM_TESTDATA", os.path.join(HERE, "../../shared")), "testdata")
    ref = os.environ.get("LLAMACPP_REF", os.path.join(HERE, "../../llamacpp-ref"))
    vocab = bge_vocab(testdata, ref)
    V, E, L, F, H, P = len(vocab), 64, 2, 128, 4, 128
    os.makedirs(os.path.join(a.out, "1_Pooling"), exist_ok=True)
    with open(os.path.join(a.out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump({"architectures": ["BertModel"], "model_type": "bert", "vocab_size": V, "hidden_size": E,
                   "num_hidden_layers": L, "intermediate_size": F, "num_attention_heads": H,
                   "max_position_embeddings": P, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
                   "pad_token_id": 0}, f)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]",
                   "pad_token": "[PAD]", "mask_token": "[MASK]"}, f)
    with open(os.path.join(a.out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}], f)
    with open(os.path.join(a.out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": E, "pooling_mode_mean_tokens": a.pooling == "mean",
                   "pooling_mode_cls_token": a.pooling == "cls"}, f)

    # Weights ~ 1 / sqrt(fan in), LayerNorm gains around 1: activations stay O(1) through the layers.
    rng = np.random.default_rng(a.seed)
    tensors = {}

    def add(name, shape, scale, offset=0.0):
        tensors[name] = (rng.standard_normal(shape) * scale + offset).astype(np.float32)

    add("embeddings.word_embeddings.weight", (V, E), 1.0)
    add("embeddings.position_embeddings.weight", (P, E), 0.5)
    add("embeddings.token_type_embeddings.weight", (2, E), 0.5)
    add("embeddings.LayerNorm.weight", (E,), 0.2, 1.0)
    add("embeddings.LayerNorm.bias", (E,), 0.2)
    s = 1 / np.sqrt(E)
    for l in range(L):
        p = f"encoder.layer.{l}."
        for m in ("query", "key", "value"):
            add(p + f"attention.self.{m}.weight", (E, E), 2 * s)
            add(p + f"attention.self.{m}.bias", (E,), 0.3)
        add(p + "attention.output.dense.weight", (E, E), s)
        add(p + "attention.output.dense.bias", (E,), 0.2)
        add(p + "attention.output.LayerNorm.weight", (E,), 0.2, 1.0)
        add(p + "attention.output.LayerNorm.bias", (E,), 0.2)
        add(p + "intermediate.dense.weight", (F, E), 1.5 * s)
        add(p + "intermediate.dense.bias", (F,), 0.3)
        add(p + "output.dense.weight", (E, F), 1 / np.sqrt(F))
        add(p + "output.dense.bias", (E,), 0.2)
        add(p + "output.LayerNorm.weight", (E,), 0.2, 1.0)
        add(p + "output.LayerNorm.bias", (E,), 0.2)
    header, off = {}, 0
    for name, v in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + v.nbytes]}
        off += v.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for v in tensors.values():
            f.write(v.tobytes())
    print(f"{a.out}: tiny BertModel, vocab {V}, pooling {a.pooling}")


if __name__ == "__main__":
    main()
