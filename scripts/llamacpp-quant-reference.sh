#!/usr/bin/env bash
# Records the reference numbers of tests/quant/test_quant_vs_llamacpp.cpp: llama.cpp's quantizer
# (ggml_quantize_chunk of libggml-base, built by build-llamacpp-reference.sh from the
# node-llama-cpp source bundle, llama.cpp v0.5.0 / de3ff81, driven by scripts/ggml-quantize-file.c
# exactly as `llama-quantize --pure` drives it: every matrix in the one type, norms F32)
# quantizes the F32 tiny-zh-poems model to every type EdgeLLM's quantizer writes;
# build/edgellm_quant_rmse then measures each tensor's RMSE against the F32 original and the
# file's perplexity on zh-eval.txt with EdgeLLM's engine. Written to
# tests/quant/data/llamacpp-quant-reference.json with the commands. Not run by CI (llama.cpp is
# never built there); rerun when the reference changes. With LLAMA_QUANTIZE=path/to/llama-quantize
# the real tool is used instead of the driver (same numbers expected; not done here: libllama
# did not finish building in the time available).
#
#   scripts/llamacpp-quant-reference.sh [BUILD_DIR] [LLAMACPP_DIR]   (build, ../llamacpp-ref)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
llama_dir=${2:-$root/../llamacpp-ref}
testdata=${EDGELLM_TESTDATA:-$root/../shared}
out=$root/tests/quant/data/llamacpp-quant-reference.json
model_rel=tiny-zh-poems.gguf
text_rel=text/zh-eval.txt

if [ -n "${LLAMA_QUANTIZE:-}" ]; then
  quantize=$LLAMA_QUANTIZE
  tool="llama-quantize --pure"
else
  libggml=$(LLAMACPP_TARGETS=ggml-base "$root/scripts/build-llamacpp-reference.sh" "$llama_dir")
  llama_src=$(realpath "$llama_dir")/src
  quantize=$(realpath "$llama_dir")/ggml-quantize-file
  cc -O2 -I "$llama_src/ggml/include" "$root/scripts/ggml-quantize-file.c" -L "$(dirname "$libggml")" -lggml-base \
    -Wl,-rpath,"$(dirname "$libggml")" -o "$quantize"
  tool="scripts/ggml-quantize-file.c"
fi
[ -x "$build/edgellm_quant_rmse" ] || cmake --build "$build" --target edgellm_quant_rmse
commit=$(git -C "$(realpath "$llama_dir")/src" rev-parse --short HEAD)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# EdgeLLM file-type name (quant::file_type_from_name) = llama-quantize type name.
for ftype in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q5_K_S Q6_K; do
  if [ -n "${LLAMA_QUANTIZE:-}" ]; then
    cmd="llama-quantize --pure $model_rel $ftype.gguf $ftype 2"
    set -- --pure "$testdata/models/$model_rel" "$tmp/$ftype.gguf" "$ftype" 2
  else
    cmd="ggml-quantize-file $model_rel $ftype.gguf $ftype"
    set -- "$testdata/models/$model_rel" "$tmp/$ftype.gguf" "$ftype"
  fi
  echo "== $cmd" >&2
  nice -n 19 "$quantize" "$@" > "$tmp/$ftype.log" 2>&1 || { tail -20 "$tmp/$ftype.log" >&2; exit 1; }
  "$build/edgellm_quant_rmse" "$testdata/models/$model_rel" "$tmp/$ftype.gguf" "$testdata/testdata/$text_rel" \
    > "$tmp/$ftype.jsonl"
  printf '%s\n' "$cmd" > "$tmp/$ftype.cmd"
done

# The synthetic Qwen2.5-0.5B-shape layer (tests/support/quant_error.h), per tensor only.
"$build/edgellm_quant_rmse" --write-qwen05-layer "$tmp/qwen05.gguf"
for ftype in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q5_K_S Q6_K; do
  if [ -n "${LLAMA_QUANTIZE:-}" ]; then
    cmd="llama-quantize --pure qwen05-layer.gguf $ftype.gguf $ftype 2"
    set -- --pure "$tmp/qwen05.gguf" "$tmp/qwen05-$ftype.gguf" "$ftype" 2
  else
    cmd="ggml-quantize-file qwen05-layer.gguf $ftype.gguf $ftype"
    set -- "$tmp/qwen05.gguf" "$tmp/qwen05-$ftype.gguf" "$ftype"
  fi
  echo "== $cmd" >&2
  nice -n 19 "$quantize" "$@" > "$tmp/qwen05-$ftype.log" 2>&1 || { tail -20 "$tmp/qwen05-$ftype.log" >&2; exit 1; }
  "$build/edgellm_quant_rmse" "$tmp/qwen05.gguf" "$tmp/qwen05-$ftype.gguf" > "$tmp/qwen05-$ftype.jsonl"
  printf '%s\n' "$cmd" > "$tmp/qwen05-$ftype.cmd"
done

python3 - "$tmp" "$out" "$commit" "$model_rel" "$text_rel" "$tool" <<'PY'
import json, sys
tmp, out, commit, model, text, tool = sys.argv[1:]

def read_types(prefix):
    types = {}
    for ftype in ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K_S", "Q5_K_S", "Q6_K"]:
        tensors, ppl, tname = {}, None, None
        for line in open(f"{tmp}/{prefix}{ftype}.jsonl"):
            rec = json.loads(line)
            if "perplexity" in rec:
                ppl = rec["perplexity"]
                continue
            tensors[rec["tensor"]] = {"type": rec["type"], "rmse": rec["rmse"], "rms": rec["rms"]}
            tname = tname or rec["type"]
        entry = {"ftype": ftype, "command": open(f"{tmp}/{prefix}{ftype}.cmd").read().strip(), "tensors": tensors}
        if ppl is not None:
            entry["perplexity"] = ppl
        types[tname] = entry
    return types

types = read_types("")
qwen05 = read_types("qwen05-")
doc = {
    "generated_by": f"scripts/llamacpp-quant-reference.sh: {tool}, then build/edgellm_quant_rmse F32 QUANT TEXT",
    "llama_cpp": f"v0.5.0 ({commit}) from the node-llama-cpp 3.22.1 source bundle, built with GGML_NATIVE=ON",
    "source_model": model,
    "text": text,
    "perplexity_params": "EdgeLLM engine, context 128, BOS, F32 KV (tests/support/quant_error.cpp file_perplexity)",
    "types": types,
    "synthetic_qwen05_layer": {
        "spec": "tests/support/quant_error.cpp qwen05_layer_spec(): qwen2, n_embd 896, n_ff 4864, 14/2 heads, "
                "tied, vocab 300, seed 5, F32 (regenerated by the test; rows of 896 fit only 32-element blocks)",
        "types": qwen05,
    },
}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"wrote {out}: {', '.join(types)}")
PY
