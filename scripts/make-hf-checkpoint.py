#!/usr/bin/env python3
"""Writes a synthetic Hugging Face checkpoint of a real model's shape (random weights), for
measuring `edgellm convert` on real sizes (docs/convert.md, peak RSS) without downloading a model.

    scripts/make-hf-checkpoint.py OUT_DIR [--shape qwen2.5-0.5b|qwen3-0.6b|llama-3.2-1b|tiny-qwen2|tiny-qwen3|tiny-llama3]
                                  [--dtype bf16|f16|f32] [--shards N] [--tokenizer DIR]

OUT_DIR gets config.json (the real model's hyper-parameters), model.safetensors (or N shards and
model.safetensors.index.json, tensors dealt in file order) written one tensor at a time, and the
tokenizer.json / tokenizer_config.json of --tokenizer DIR (default: shared/testdata/tokenizers/
qwen3 for the Qwen shapes, llama3 for Llama). Needs numpy (Debian: python3-numpy). Not a test.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

SHAPES = {
    # vocab, hidden, layers, ffn, heads, kv heads, head_dim (None: hidden / heads), tied, extra config
    "qwen2.5-0.5b": dict(arch="Qwen2ForCausalLM", model_type="qwen2", vocab=151936, hidden=896, layers=24, ffn=4864,
                         heads=14, kv=2, head_dim=None, tied=True, bias=True, qk_norm=False,
                         extra={"rope_theta": 1000000.0, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
                                "bos_token_id": 151643, "eos_token_id": 151643}, tokenizer="qwen3"),
    "qwen3-0.6b": dict(arch="Qwen3ForCausalLM", model_type="qwen3", vocab=151936, hidden=1024, layers=28, ffn=3072,
                       heads=16, kv=8, head_dim=128, tied=True, bias=False, qk_norm=True,
                       extra={"rope_theta": 1000000.0, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
                              "bos_token_id": 151643, "eos_token_id": 151645}, tokenizer="qwen3"),
    "llama-3.2-1b": dict(arch="LlamaForCausalLM", model_type="llama", vocab=128256, hidden=2048, layers=16, ffn=8192,
                         heads=32, kv=8, head_dim=64, tied=True, bias=False, qk_norm=False,
                         extra={"rope_theta": 500000.0, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
                                "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                 "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                                "bos_token_id": 128000, "eos_token_id": 128001}, tokenizer="llama3"),
}
# Tiny models with the real tokenizers' vocabularies (scripts/convert-vs-llamacpp.sh).
SHAPES["tiny-qwen2"] = dict(SHAPES["qwen2.5-0.5b"], hidden=64, layers=2, ffn=128, heads=4, kv=2)
SHAPES["tiny-qwen3"] = dict(SHAPES["qwen3-0.6b"], hidden=64, layers=2, ffn=128, heads=4, kv=2, head_dim=32)
SHAPES["tiny-llama3"] = dict(SHAPES["llama-3.2-1b"], hidden=64, layers=2, ffn=128, heads=4, kv=2, head_dim=None,
                             tied=False, extra=dict(SHAPES["llama-3.2-1b"]["extra"], rope_scaling={
                                 "factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                 "original_max_position_embeddings": 64, "rope_type": "llama3"}))
DTYPES = {"bf16": ("BF16", 2), "f16": ("F16", 2), "f32": ("F32", 4)}


def tensor_list(s):
    hd = s["head_dim"] or s["hidden"] // s["heads"]
    q, kv, e, f = s["heads"] * hd, s["kv"] * hd, s["hidden"], s["ffn"]
    out = [("model.embed_tokens.weight", (s["vocab"], e))]
    for l in range(s["layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (e,)), (p + "self_attn.q_proj.weight", (q, e)),
                (p + "self_attn.k_proj.weight", (kv, e)), (p + "self_attn.v_proj.weight", (kv, e))]
        if s["bias"]:
            out += [(p + "self_attn.q_proj.bias", (q,)), (p + "self_attn.k_proj.bias", (kv,)),
                    (p + "self_attn.v_proj.bias", (kv,))]
        if s["qk_norm"]:
            out += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        out += [(p + "self_attn.o_proj.weight", (e, q)), (p + "post_attention_layernorm.weight", (e,)),
                (p + "mlp.gate_proj.weight", (f, e)), (p + "mlp.up_proj.weight", (f, e)),
                (p + "mlp.down_proj.weight", (e, f))]
    out.append(("model.norm.weight", (e,)))
    if not s["tied"]:
        out.append(("lm_head.weight", (s["vocab"], e)))
    return out


def encode(values, dtype):
    if dtype == "F32":
        return values.astype(np.float32).tobytes()
    if dtype == "F16":
        return values.astype(np.float16).tobytes()
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()


def write_safetensors(path, tensors, dtype, size, rng):
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors:
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name, shape in tensors:
            # Matrices ~ 1 / sqrt(fan in) (0.033 for a 896-wide model), so activations and logits stay
            # O(1): a comparison of two engines' logits then measures something.
            scale = 1.0 / np.sqrt(shape[1]) if len(shape) == 2 else 0.1
            values = rng.standard_normal(shape, dtype=np.float32) * scale + (1.0 if name.endswith("norm.weight") else 0.0)
            f.write(encode(values, dtype))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--shape", default="qwen2.5-0.5b", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    s = SHAPES[a.shape]
    dtype, size = DTYPES[a.dtype]
    os.makedirs(a.out, exist_ok=True)
    config = {"architectures": [s["arch"]], "model_type": s["model_type"], "vocab_size": s["vocab"],
              "hidden_size": s["hidden"], "num_hidden_layers": s["layers"], "intermediate_size": s["ffn"],
              "num_attention_heads": s["heads"], "num_key_value_heads": s["kv"], "tie_word_embeddings": s["tied"],
              "torch_dtype": {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}[dtype], **s["extra"]}
    if s["head_dim"]:
        config["head_dim"] = s["head_dim"]
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    rng = np.random.default_rng(a.seed)
    tensors = tensor_list(s)
    if a.shards <= 1:
        write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, dtype, size, rng)
    else:
        per = (len(tensors) + a.shards - 1) // a.shards
        weight_map = {}
        for i in range(a.shards):
            name = f"model-{i + 1:05d}-of-{a.shards:05d}.safetensors"
            part = tensors[i * per:(i + 1) * per]
            write_safetensors(os.path.join(a.out, name), part, dtype, size, rng)
            weight_map.update({t: name for t, _ in part})
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)
    tok = a.tokenizer or os.path.join(os.environ.get("EDGELLM_TESTDATA", os.path.join(os.path.dirname(__file__), "../../shared")),
                                      "testdata/tokenizers", s["tokenizer"])
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tok, name), os.path.join(a.out, name))
    n = sum(int(np.prod(sh)) for _, sh in tensors)
    print(f"{a.out}: {a.shape}, {n} parameters, {dtype}, {max(a.shards, 1)} file(s)")


if __name__ == "__main__":
    sys.exit(main())
