#!/usr/bin/env bash
# Re-measures the benchmark tables of docs/benchmarks.md: synthesizes the model shapes
# (if missing) and runs `edgellm bench` on them with 2 threads. Not a test: it takes ~15 minutes
# on a quiet 2-core machine and its numbers mean something only when nothing else runs.
#
#   scripts/bench-issue-models.sh [BUILD_DIR] [MODEL_DIR] [OUT_DIR]
#
# MODEL_DIR holds ~6 GB of GGUF files (default ../bench-models, outside the repository).
set -euo pipefail
BUILD=${1:-build}
MODELS=${2:-../bench-models}
OUT=${3:-$MODELS/results}
EDGELLM="$BUILD/edgellm"
TOK=${EDGELLM_TESTDATA:-../shared}/testdata/tokenizers/qwen3/tokenizer.json
mkdir -p "$MODELS" "$OUT"

synth() {  # shape type file [tokenizer]
  local f="$MODELS/$3"
  [ -f "$f" ] && return 0
  echo "== synth $1 $2 -> $f" >&2
  "$EDGELLM" synth --shape "$1" --type "$2" ${4:+--tokenizer "$4"} -o "$f" -q
}
synth qwen2.5-0.5b q4_0 qwen2.5-0.5b-q4_0.gguf "$TOK"
synth qwen2.5-0.5b q8_0 qwen2.5-0.5b-q8_0.gguf "$TOK"
synth qwen2.5-0.5b q4_K_M qwen2.5-0.5b-q4_K_M.gguf "$TOK"
synth tinyllama-1.1b q4_0 tinyllama-1.1b-q4_0.gguf
synth tinyllama-1.1b q8_0 tinyllama-1.1b-q8_0.gguf
synth tinyllama-1.1b q4_K_M tinyllama-1.1b-q4_K_M.gguf
synth llama-3.2-1b q4_0 llama-3.2-1b-q4_0.gguf
synth qwen2.5-1.5b q4_0 qwen2.5-1.5b-q4_0.gguf "$TOK"
synth qwen2.5-1.5b q4_K_M qwen2.5-1.5b-q4_K_M.gguf "$TOK"
synth qwen3-0.6b q4_0 qwen3-0.6b-q4_0.gguf "$TOK"
synth qwen3-0.6b q4_K_M qwen3-0.6b-q4_K_M.gguf "$TOK"

ALL=$(printf '%s,' "$MODELS"/qwen2.5-0.5b-q4_0.gguf "$MODELS"/qwen2.5-0.5b-q8_0.gguf "$MODELS"/qwen2.5-0.5b-q4_K_M.gguf \
  "$MODELS"/tinyllama-1.1b-q4_0.gguf "$MODELS"/tinyllama-1.1b-q8_0.gguf "$MODELS"/tinyllama-1.1b-q4_K_M.gguf \
  "$MODELS"/llama-3.2-1b-q4_0.gguf "$MODELS"/qwen2.5-1.5b-q4_0.gguf "$MODELS"/qwen2.5-1.5b-q4_K_M.gguf)
ALL=${ALL%,}
MUST=$(printf '%s,' "$MODELS"/qwen2.5-0.5b-q4_0.gguf "$MODELS"/qwen2.5-0.5b-q8_0.gguf "$MODELS"/qwen2.5-0.5b-q4_K_M.gguf \
  "$MODELS"/tinyllama-1.1b-q4_0.gguf "$MODELS"/qwen2.5-1.5b-q4_0.gguf "$MODELS"/qwen2.5-1.5b-q4_K_M.gguf)
MUST=${MUST%,}
Q05="$MODELS/qwen2.5-0.5b-q4_0.gguf"

run() {  # name, bench args...
  local name=$1; shift
  echo "== $name: edgellm bench $*" >&2
  "$EDGELLM" bench "$@" -o md --json-out "$OUT/$name.json" | tee "$OUT/$name.md"
}

# 1. The table: pp512 and tg128 of every model, 2 threads, repacking on (the default).
run main -m "$ALL" -p 512 -n 128 -t 2 -r 3
# 2. Decode at 1k and 4k tokens of context for the models the issue names.
run depth -m "$MUST" -p 0 -n 32 -d 1024,4096 -t 2 -r 2 --no-bandwidth
# 2b. Prefill at depth: the last 512 tokens of a 4k prompt (prompt attention by query blocks).
run prefill-depth -m "$Q05,$MODELS/tinyllama-1.1b-q4_0.gguf,$MODELS/qwen2.5-1.5b-q4_K_M.gguf" -p 512 -n 0 -d 0,3584 -t 2 -r 2 --no-bandwidth
# 3. Threads beyond the cores, and the same with a busy second core (a spinning process).
run threads -m "$Q05" -p 0 -n 64 -t 1,2,3,4 -r 2 --no-bandwidth
( while :; do :; done ) & BUSY=$!
trap 'kill $BUSY 2>/dev/null || true' EXIT
run busy -m "$Q05" -p 0 -n 64 -t 1,2,4 -r 2 --no-bandwidth
kill $BUSY; trap - EXIT
# 4. What repacking buys: the same model with the mapped file layout.
run repack -m "$Q05,$MODELS/qwen2.5-1.5b-q4_K_M.gguf" -p 512 -n 64 -t 2 -r 2 --repack on,off --no-bandwidth
echo "results in $OUT" >&2
