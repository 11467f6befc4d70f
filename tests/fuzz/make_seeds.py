#!/usr/bin/env python3
"""Writes the seed inputs of the fuzzers that start from shared/testdata files.

    tests/fuzz/make_seeds.py OUT_DIR [TESTDATA]      (TESTDATA default: ../shared/testdata)

OUT_DIR/tokenizer_json/  small tokenizer.json files cut from the real Qwen3 and Llama 3 ones:
                         pre_tokenizer, normalizer, decoder, post_processor kept whole; the
                         vocabulary cut to the 256-symbol byte alphabet plus the first merges
                         (renumbered densely); a share of the added_tokens. Variants: merges as
                         "a b" strings and as [a, b] pairs, a plain ByteLevel (GPT-2) pre-tokenizer.
OUT_DIR/chat_messages/   the conversations of testdata/tokenizers/*/chat-cases.jsonl, plus tool
                         calls, content parts and other shapes templates branch on.
OUT_DIR/chat_template/   the chat_template of every testdata/tokenizers/*/tokenizer_config.json.
OUT_DIR/tokenizer/       the texts of testdata/tokenizers/*/encode-cases.jsonl, each behind a mode
                         byte (fuzz_tokenizer: bit 0 parse_special, bits 1.. the vocabulary).
OUT_DIR/json/            the lines of chat-cases.jsonl and encode-cases.jsonl.

The kept corpus (tests/fuzz/corpus/<target>/) started from these and was minimised with
libFuzzer's -merge=1 (scripts/fuzz-long.sh); rerun this only to rebuild seeds from scratch.
"""
import json
import os
import sys


def byte_alphabet():
    """GPT-2's bytes_to_unicode: the 256 symbols byte-level BPE vocabularies start with."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def cut_tokenizer(tj, n_merges, n_added, pairs):
    alphabet = byte_alphabet()
    vocab = {s: i for i, s in enumerate(alphabet)}
    merges = []
    for m in tj["model"]["merges"]:
        a, b = (m if isinstance(m, list) else m.split(" ", 1))
        if a in vocab and b in vocab and a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append([a, b] if pairs else a + " " + b)
            if len(merges) == n_merges:
                break
    added = []
    for t in tj["added_tokens"][:n_added]:
        t = dict(t)
        t["id"] = len(vocab) + len(added)
        added.append(t)
    out = {k: tj[k] for k in ("version", "truncation", "padding", "normalizer", "pre_tokenizer",
                              "post_processor", "decoder") if k in tj}
    out["added_tokens"] = added
    model = dict(tj["model"])
    model["vocab"] = vocab
    model["merges"] = merges
    out["model"] = model
    return out


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    out = sys.argv[1]
    testdata = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "../../../shared/testdata")
    tok_dir = os.path.join(testdata, "tokenizers")
    for name in sorted(os.listdir(tok_dir)):
        d = os.path.join(tok_dir, name)
        with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        for n_merges, pairs in ((120, True), (40, False)):
            cut = cut_tokenizer(tj, n_merges, 24, pairs)
            write(os.path.join(out, "tokenizer_json", f"{name}-{n_merges}-{'pairs' if pairs else 'strings'}.json"),
                  json.dumps(cut, ensure_ascii=False, separators=(",", ":")))
        gpt2 = cut_tokenizer(tj, 20, 2, False)
        gpt2["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
        write(os.path.join(out, "tokenizer_json", f"{name}-gpt2.json"), json.dumps(gpt2, separators=(",", ":")))

        with open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        tmpl = config.get("chat_template")
        if isinstance(tmpl, str):
            write(os.path.join(out, "chat_template", f"{name}.jinja"), tmpl)

        with open(os.path.join(d, "encode-cases.jsonl"), encoding="utf-8") as f:
            for i, line in enumerate(f):
                write(os.path.join(out, "json", f"{name}-encode{i}.json"), line)
                text = json.loads(line)["text"].encode("utf-8")
                mode = (i % 10)
                os.makedirs(os.path.join(out, "tokenizer"), exist_ok=True)
                with open(os.path.join(out, "tokenizer", f"{name}-encode{i}.bin"), "wb") as b:
                    b.write(bytes([mode]) + text)

        with open(os.path.join(d, "chat-cases.jsonl"), encoding="utf-8") as f:
            for i, line in enumerate(f):
                write(os.path.join(out, "json", f"{name}-chat{i}.json"), line)
                case = json.loads(line)
                doc = {k: v for k, v in case.items() if k not in ("rendered", "add_generation_prompt")}
                write(os.path.join(out, "chat_messages", f"{name}-case{i}.json"), json.dumps(doc, ensure_ascii=False))

    extra = [
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                      {"role": "assistant", "content": "<think>\nr\n</think>\n\na", "tool_calls": [
                          {"type": "function", "function": {"name": "f", "arguments": {"x": [1, None, True]}}},
                          {"function": {"name": "g", "arguments": "{\"y\": 2}"}}]},
                      {"role": "tool", "content": "{\"ok\": 1}"}, {"role": "tool", "content": "2"},
                      {"role": "user", "content": "again"}],
         "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                                                     "parameters": {"type": "object", "properties": {"x": {"type": "array"}}}}}],
         "enable_thinking": False},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]},
                      {"role": "assistant", "content": None}, {"role": "user", "content": 7}]},
        {"messages": [{"role": "assistant", "content": "first"}, {"role": "user", "content": "x", "name": "n"}],
         "documents": [{"title": "t", "text": "body"}], "enable_thinking": True, "bos_token": "<b>"},
        [{"role": "user", "content": "\u0000\ud7ff\ue000 <|im_end|><|eot_id|>{{ 1 }}{% raw %}"}],
    ]
    for i, doc in enumerate(extra):
        write(os.path.join(out, "chat_messages", f"shape{i}.json"), json.dumps(doc))


if __name__ == "__main__":
    main()
