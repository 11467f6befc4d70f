#!/usr/bin/env bash
# Loads files written by `edgellm convert` in llama.cpp (libllama of the reference build,
# scripts/build-llamacpp-reference.sh: llama.cpp v0.5.0 / de3ff81 from the node-llama-cpp source
# bundle) and compares its first-step logits with EdgeLLM's on the same file: the KL divergence
# KL(llama.cpp || EdgeLLM) of the next-token distribution after a prompt, the largest logit
# difference, and whether both tokenizers give the same ids. Not run by CI (llama.cpp is never
# built there); the results are recorded in docs/convert.md.
#
#   scripts/convert-vs-llamacpp.sh [BUILD_DIR] [LLAMACPP_DIR]     (build, ../llamacpp-ref)
#
# Checkpoints (written to a temporary directory, nothing kept):
#   - real trained models: shared/models/stories260K.gguf and tiny-zh-poems.gguf exported back to
#     Hugging Face layout by scripts/gguf-to-hf.py (transformers names, Q/K rows in HF order, a
#     SentencePiece-style tokenizer.json), converted again; the converted tensors must equal the
#     originals (llama.cpp's logits on the original and on the round trip are compared too);
#   - synthetic tiny models with the real Qwen3 / Llama 3 tokenizers (scripts/make-hf-checkpoint.py
#     tiny-qwen2 F32, tiny-qwen3 BF16, tiny-llama3 F16 in 2 shards with llama3 RoPE scaling).
# Each is converted to several --type values. Needs numpy (Debian python3-numpy) for the two
# Python helpers, and the llama.cpp checkout's gguf-py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
llama_dir=$(realpath -m "${2:-$root/../llamacpp-ref}")
export EDGELLM_TESTDATA=${EDGELLM_TESTDATA:-$root/../shared}
testdata=$EDGELLM_TESTDATA
py=${PYTHON:-/usr/bin/python3}

libllama=$(LLAMACPP_TARGETS=llama "$root/scripts/build-llamacpp-reference.sh" "$llama_dir")
src=$llama_dir/src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I "$src/include" -I "$src/ggml/include" "$root/scripts/llamacpp-logits.c" -L "$(dirname "$libllama")" -lllama \
  -Wl,-rpath,"$(dirname "$libllama")" -o "$tmp/llamacpp-logits"
[ -x "$build/edgellm" ] || cmake --build "$build" --target edgellm_cli
edgellm=$build/edgellm
export PYTHONPATH=$src/gguf-py

kl() {  # KL(p || q) of softmax(logits), max |dlogit|, argmax of each
  "$py" - "$1" "$2" <<'EOF'
import sys, numpy as np
p = np.fromfile(sys.argv[1], dtype=np.float32).astype(np.float64)
q = np.fromfile(sys.argv[2], dtype=np.float32).astype(np.float64)
assert p.size == q.size, (p.size, q.size)
lp = p - p.max(); lp -= np.log(np.exp(lp).sum())
lq = q - q.max(); lq -= np.log(np.exp(lq).sum())
print(f"{float((np.exp(lp) * (lp - lq)).sum()):.2e} {float(np.abs(p - q).max()):.2e} {int(p.argmax())} {int(q.argmax())}")
EOF
}

printf '| checkpoint | --type | tokens equal | KL(llama.cpp ‖ EdgeLLM) | max abs logit diff | top-1 llama.cpp / EdgeLLM |\n'
printf '|---|---|---|--:|--:|---|\n'
compare() {  # name, gguf, prompt
  local name=$1 gguf=$2 prompt=$3 type=$4
  local ids_l ids_e r
  ids_l=$("$tmp/llamacpp-logits" "$gguf" "$prompt" "$tmp/l.bin")
  ids_e=$("$edgellm" tokenize -m "$gguf" --json "$prompt" | "$py" -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))')
  "$edgellm" run -m "$gguf" -p "$prompt" -n 1 --temp 0 -t 1 --dump-logits "$tmp/e.bin" > /dev/null 2>&1
  r=$(kl "$tmp/l.bin" "$tmp/e.bin")
  read -r k d tl te <<< "$r"
  printf '| %s | %s | %s | %s | %s | %s / %s |\n' "$name" "$type" "$([ "$ids_l" = "$ids_e" ] && echo yes || echo "NO: $ids_l vs $ids_e")" \
    "$k" "$d" "$tl" "$te"
}

for m in stories260K tiny-zh-poems; do
  "$py" "$root/scripts/gguf-to-hf.py" "$testdata/models/$m.gguf" "$tmp/hf-$m" > /dev/null
  prompt="Once upon a time, there was a little girl"
  [ "$m" = tiny-zh-poems ] && prompt="床前明月光，疑是地上霜。"
  types="f32 f16 q8_0 q4_0"
  [ "$m" = tiny-zh-poems ] && types="f32 f16 q8_0 q4_0 Q4_K_M"
  for t in $types; do
    "$edgellm" convert "$tmp/hf-$m" "$tmp/$m-$t.gguf" --type "$t" -q > /dev/null
    compare "$m (HF round trip)" "$tmp/$m-$t.gguf" "$prompt" "$t"
  done
  # The round trip of the F32 file must be the original model: same logits in llama.cpp.
  "$tmp/llamacpp-logits" "$testdata/models/$m.gguf" "$prompt" "$tmp/orig.bin" > /dev/null
  "$tmp/llamacpp-logits" "$tmp/$m-f32.gguf" "$prompt" "$tmp/rt.bin" > /dev/null
  echo "| $m: llama.cpp on the original vs on the round trip (f32) | | | $(kl "$tmp/orig.bin" "$tmp/rt.bin" | cut -d' ' -f1-2 | sed 's/ / | /') | |"
done

for spec in "tiny-qwen2 f32 1" "tiny-qwen3 bf16 1" "tiny-llama3 f16 2"; do
  read -r shape dtype shards <<< "$spec"
  "$py" "$root/scripts/make-hf-checkpoint.py" "$tmp/$shape" --shape "$shape" --dtype "$dtype" --shards "$shards" > /dev/null
  for t in auto f32 q8_0 Q4_K_M; do
    "$edgellm" convert "$tmp/$shape" "$tmp/$shape-$t.gguf" --type "$t" -q > /dev/null
    compare "$shape ($dtype, $shards file(s))" "$tmp/$shape-$t.gguf" "Hello world! 你好，世界。 <think>" "$t"
  done
done
