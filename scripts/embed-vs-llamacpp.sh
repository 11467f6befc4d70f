#!/usr/bin/env bash
# EdgeLLM's embeddings against llama.cpp's on the same GGUF files (docs/embeddings.md,
# "Against llama.cpp"), and the paired throughput benchmark (docs/benchmarks.md, "Embeddings").
# Not a test and not run by CI: it needs the reference build of scripts/build-llamacpp-reference.sh
# (libllama; LLAMACPP_TARGETS=llama) and compiles scripts/llamacpp-embed.c against it.
#
#   scripts/embed-vs-llamacpp.sh compare [BUILD] [LLAMACPP_DIR]   # cosine per text, every pooling
#   scripts/embed-vs-llamacpp.sh bench   [BUILD] [LLAMACPP_DIR]   # texts/s at 16 / 128 / 512 tokens
#
# Models: synthetic bge-small-en (CLS pooling, 12 layers) and all-MiniLM-L6 (mean pooling) of
# the real shapes with the real bge vocabulary (ggml-vocab-bert-bge.gguf), Q8_0 and F16, made by
# `edgellm synth`. Both engines get the same token ids (EdgeLLM's WordPiece, which equals
# llama.cpp's on the bge vocab cases) and 2 threads. Environment: EDGELLM_TESTDATA (shared/),
# WORK (default /tmp/embed-vs-llamacpp), PAIRS (bench pairs, default 3), THREADS (2).
set -euo pipefail
MODE=${1:?usage: $0 compare|bench [BUILD] [LLAMACPP_DIR]}
BUILD=$(realpath "${2:-build}")
LLAMA=$(realpath "${3:-../llamacpp-ref}")
TESTDATA=${EDGELLM_TESTDATA:-$(dirname "$0")/../../shared}
WORK=${WORK:-/tmp/embed-vs-llamacpp}
THREADS=${THREADS:-2}
PAIRS=${PAIRS:-3}
EDGELLM="$BUILD/edgellm"
mkdir -p "$WORK"

LIB="$LLAMA/src/build/bin"
[ -f "$LIB/libllama.so" ] || { echo "no $LIB/libllama.so: LLAMACPP_TARGETS=llama scripts/build-llamacpp-reference.sh $LLAMA" >&2; exit 1; }
DRIVER="$WORK/llamacpp-embed"
gcc -O2 -o "$DRIVER" "$(dirname "$0")/llamacpp-embed.c" -I"$LLAMA/src/include" -I"$LLAMA/src/ggml/include" \
  -L"$LIB" -lllama -lm -Wl,-rpath,"$LIB"

VOCAB="$TESTDATA/testdata/vocab/ggml-vocab-bert-bge.gguf"
model() {  # shape type -> path
  local f="$WORK/$1-$2.gguf"
  [ -f "$f" ] || "$EDGELLM" synth --shape "$1" --type "$2" --tokenizer "$VOCAB" -o "$f" -q >&2
  echo "$f"
}

if [ "$MODE" = compare ]; then
  TEXTS=("Hello world"
         "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill."
         "Where did I put the notes from Tuesday's meeting about the budget?"
         "我的笔记在哪里？ 会议记录 budget 2024"
         "Caf\u00e9 d\u00e9j\u00e0 vu: numbers 3.14159 and 2,718 -- punctuation!?"
         "a")
  : > "$WORK/ids.txt"
  for t in "${TEXTS[@]}"; do
    "$EDGELLM" tokenize -m "$(model bge-small-en f16)" --json "$(printf '%b' "$t")" |
      python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["ids"])))' >> "$WORK/ids.txt"
  done
  printf '%-28s %-8s %-5s %12s %12s\n' model pooling n "worst cos" "mean cos"
  for shape in bge-small-en all-minilm-l6; do
    for type in f16 q8_0; do
      m=$(model "$shape" "$type")
      for pooling in cls mean last none; do
        p=$(case $pooling in none) echo 0;; mean) echo 1;; cls) echo 2;; last) echo 3;; esac)
        "$EDGELLM" embed -m "$m" --token-ids "$WORK/ids.txt" --pooling "$pooling" --embd-output-format raw \
          -t "$THREADS" > "$WORK/ours.txt"
        "$DRIVER" "$m" "$THREADS" 1024 "$p" 2 1 < "$WORK/ids.txt" > "$WORK/theirs.txt" 2> "$WORK/llama.log"
        python3 - "$WORK/ours.txt" "$WORK/theirs.txt" "$shape-$type" "$pooling" <<'PY'
import math, sys
a = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
b = [list(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
assert len(a) == len(b), (len(a), len(b))
cos = []
for x, y in zip(a, b):
    xy = sum(p * q for p, q in zip(x, y)); xx = sum(p * p for p in x); yy = sum(q * q for q in y)
    cos.append(xy / math.sqrt(xx * yy))
print("%-28s %-8s %-5d %12.8f %12.8f" % (sys.argv[3], sys.argv[4], len(cos), min(cos), sum(cos) / len(cos)))
PY
      done
    done
  done
  exit 0
fi

[ "$MODE" = bench ] || { echo "unknown mode $MODE" >&2; exit 2; }
# Sequences of L tokens: [CLS], L - 2 ids from the vocabulary's word range, [SEP]; COUNT of them
# so each run embeds ~8k tokens (16-token texts 512 per run, 128-token 64, 512-token 16).
python3 - "$WORK" <<'PY'
import random, sys
random.seed(7)
for L, count in ((16, 512), (128, 64), (512, 16)):
    with open("%s/bench-%d.txt" % (sys.argv[1], L), "w") as f:
        for _ in range(count):
            f.write(" ".join(map(str, [101] + [random.randint(1996, 29611) for _ in range(L - 2)] + [102])) + "\n")
PY
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %6s %5s %14s %14s %8s %11s %11s\n' model tokens pair "edgellm t/s" "llama.cpp t/s" ratio "edgellm MiB" "llama MiB"
for type in q8_0 f16; do
  m=$(model bge-small-en "$type")
  for L in 16 128 512; do
    ids="$WORK/bench-$L.txt"
    n=$(wc -l < "$ids")
    for pair in $(seq 1 "$PAIRS"); do
      # Alternate which engine goes first, so a load change on the machine hits both alike.
      run_ours() { "$EDGELLM" embed -m "$m" --token-ids "$ids" --embd-output-format raw -t "$THREADS" -b 1024 \
                     --repeats 3 2>&1 >/dev/null | grep '^seconds'; }
      run_theirs() { "$DRIVER" "$m" "$THREADS" 1024 2 2 3 < "$ids" 2>&1 >/dev/null | grep '^seconds'; }
      if [ $((pair % 2)) -eq 1 ]; then a=$(run_ours); b=$(run_theirs); else b=$(run_theirs); a=$(run_ours); fi
      python3 - "$a" "$b" "$n" "$type" "$L" "$pair" <<'PY'
import sys
def parse(s):
    f = s.split(); return float(f[1]), int(f[3]), int(f[-1])
(sa, ra, ka), (sb, rb, kb) = parse(sys.argv[1]), parse(sys.argv[2])
n = int(sys.argv[3])
ta, tb = n * ra / sa, n * rb / sb
print("%-22s %6s %5s %14.1f %14.1f %8.3f %11.1f %11.1f" % ("bge-small-en " + sys.argv[4], sys.argv[5], sys.argv[6], ta, tb, ta / tb, ka / 1024, kb / 1024))
PY
    done
  done
done
