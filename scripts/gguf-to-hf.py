#!/usr/bin/env python3
"""Writes a Hugging Face checkpoint (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json) from an F32 llama GGUF with a SentencePiece vocabulary, such as
shared/models/stories260K.gguf and tiny-zh-poems.gguf: a real trained model in the layout
`edgellm convert` reads, for scripts/convert-vs-llamacpp.sh. Not a test, not used by CI.

    PYTHONPATH=LLAMACPP_SRC/gguf-py scripts/gguf-to-hf.py MODEL.gguf OUT_DIR

What it undoes: GGUF tensor names -> transformers names; the Q/K row order of llama GGUF files
(llama.cpp's converter interleaves the two rotary halves of each head; transformers keeps them
apart); the vocabulary -> a SentencePiece-style BPE tokenizer.json the way transformers'
LlamaConverter builds one from tokenizer.model (merges from the piece scores). Needs numpy and
llama.cpp's gguf-py (Debian: python3-numpy).
"""
import json
import os
import struct
import sys

import numpy as np
from gguf import GGUFReader

SPACE = "\u2581"


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    if len(f.types) == 1 and f.types[0].name == "STRING":
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    if f.types[0].name == "ARRAY":
        if f.types[1].name == "STRING":
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [f.parts[i][0].item() for i in f.data]
    return f.parts[f.data[0]][0].item()


def spm_merges(tokens, scores, types):
    """transformers' SentencePieceExtractor: every split of a piece into two pieces is a merge,
    ranked by the piece's score (higher first), ties by the parts' ids."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for i, piece in enumerate(tokens):
        if types[i] != 1:  # normal pieces only
            continue
        local = []
        for at in range(1, len(piece)):
            left, right = piece[:at], piece[at:]
            if left in vocab and right in vocab:
                local.append((left, right, scores[i]))
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2], reverse=True)
    return [[l, r] for l, r, _ in merges]


def main():
    src, out = sys.argv[1], sys.argv[2]
    r = GGUFReader(src)
    arch = field(r, "general.architecture")
    assert arch == "llama", f"{src}: only llama GGUF files ({arch})"
    p = arch + "."
    n_embd = field(r, p + "embedding_length")
    n_head = field(r, p + "attention.head_count")
    n_head_kv = field(r, p + "attention.head_count_kv", n_head)
    n_layer = field(r, p + "block_count")
    tokens = field(r, "tokenizer.ggml.tokens")
    scores = field(r, "tokenizer.ggml.scores", [0.0] * len(tokens))
    types = field(r, "tokenizer.ggml.token_type", [1] * len(tokens))
    assert field(r, "tokenizer.ggml.model") == "llama", "only SentencePiece vocabularies"
    hd = n_embd // n_head

    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_layer = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
                 "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    tensors = []
    tied = True
    for t in r.tensors:
        assert t.tensor_type.name == "F32", f"{t.name}: only F32 files"
        shape = [int(x) for x in reversed(t.shape)]  # GGUF ne -> row-major
        data = np.asarray(t.data, dtype=np.float32).reshape(shape)
        if t.name == "output.weight":
            tied = False
        if t.name in names:
            hf = names[t.name]
        elif t.name.startswith("blk."):
            _, b, kind, suffix = t.name.split(".")
            hf = f"model.layers.{b}.{per_layer[kind]}.{suffix}"
            if kind in ("attn_q", "attn_k"):
                heads = n_head if kind == "attn_q" else n_head_kv
                # GGUF row h*hd + 2j + s = HF row h*hd + s*hd/2 + j
                data = data.reshape(heads, hd // 2, 2, -1).swapaxes(1, 2).reshape(shape)
        else:
            raise SystemExit(f"{t.name}: no transformers name")
        tensors.append((hf, np.ascontiguousarray(data)))

    os.makedirs(out, exist_ok=True)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, data in tensors:
        header[name] = {"dtype": "F32", "shape": list(data.shape), "data_offsets": [off, off + data.nbytes]}
        off += data.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, data in tensors:
            f.write(data.tobytes())

    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": len(tokens),
              "hidden_size": n_embd, "num_hidden_layers": n_layer,
              "intermediate_size": field(r, p + "feed_forward_length"), "num_attention_heads": n_head,
              "num_key_value_heads": n_head_kv, "max_position_embeddings": field(r, p + "context_length", 2048),
              "rms_norm_eps": field(r, p + "attention.layer_norm_rms_epsilon", 1e-5),
              "rope_theta": field(r, p + "rope.freq_base", 10000.0), "tie_word_embeddings": tied,
              "bos_token_id": field(r, "tokenizer.ggml.bos_token_id", 1),
              "eos_token_id": field(r, "tokenizer.ggml.eos_token_id", 2), "torch_dtype": "float32"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    prefix = field(r, "tokenizer.ggml.add_space_prefix", True)
    normalizers = ([{"type": "Prepend", "prepend": SPACE}] if prefix else []) + [
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(tokens) if types[i] in (2, 3)]
    unk = next((t for i, t in enumerate(tokens) if types[i] == 2), "<unk>")
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                 "normalizer": {"type": "Sequence", "normalizers": normalizers}, "pre_tokenizer": None,
                 "post_processor": {"type": "TemplateProcessing",
                                    "single": [{"SpecialToken": {"id": tokens[config["bos_token_id"]], "type_id": 0}},
                                               {"Sequence": {"id": "A", "type_id": 0}}]},
                 "decoder": {"type": "Sequence", "decoders": [
                     {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}, {"type": "ByteFallback"},
                     {"type": "Fuse"}] + ([{"type": "Strip", "content": " ", "start": 1, "stop": 0}] if prefix else [])},
                 "model": {"type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
                           "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                           "vocab": {t: i for i, t in enumerate(tokens)}, "merges": spm_merges(tokens, scores, types)}}
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    tc = {"bos_token": tokens[config["bos_token_id"]], "eos_token": tokens[config["eos_token_id"]], "unk_token": unk,
          "add_bos_token": field(r, "tokenizer.ggml.add_bos_token", True), "add_eos_token": False,
          "add_prefix_space": prefix}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False, indent=2)
    print(f"{out}: {len(tensors)} tensors, vocab {len(tokens)}, tied {tied}, add_space_prefix {prefix}")


if __name__ == "__main__":
    main()
