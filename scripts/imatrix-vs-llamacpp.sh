#!/usr/bin/env bash
# The imatrix and mixed-recipe comparisons of docs/quantization.md against llama.cpp v0.5.0 /
# de3ff81 (the reference build of scripts/build-llamacpp-reference.sh), on tiny-zh-poems and
# zh-eval.txt at context 128. Not a test and not run by CI; prints the numbers the docs record.
#
#   scripts/imatrix-vs-llamacpp.sh [BUILD_DIR] [LLAMACPP_DIR] [WORK_DIR]   (build, ../llamacpp-ref, /tmp/imatrix-vs-llamacpp)
#
# Steps (each needs only what it names; the llama.cpp tools are used when they are built:
# LLAMACPP_TARGETS="llama-quantize llama-imatrix llama-perplexity" scripts/build-llamacpp-reference.sh):
#   1. our imatrix of the text (edgellm imatrix -c 128);
#   2. the same bytes as ggml: every weighted type quantized by `edgellm quantize --pure --imatrix`
#      and by ggml's quantizers given that imatrix (scripts/ggml-quantize-file.c, libggml-base),
#      compared tensor by tensor (scripts/gguf-tensor-diff.py);
#   3. llama-quantize given our imatrix (Q4_K_M, Q4_0): perplexity / KLD of its files and ours;
#   4. llama-imatrix's file of the same text read by us (--info --compare) and used by our quantizer;
#   5. the mixed recipe at llama.cpp's Q4_K_M size, on the whole text and held out (halves A / B).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
llama=$(realpath -m "${2:-$root/../llamacpp-ref}")
work=$(realpath -m "${3:-/tmp/imatrix-vs-llamacpp}")
testdata=${EDGELLM_TESTDATA:-$root/../shared}
E=$build/edgellm
M=$testdata/models/tiny-zh-poems.gguf
T=$testdata/testdata/text/zh-eval.txt
bin=$llama/src/build/bin
mkdir -p "$work"
cd "$work"
stats() {  # FILE BASE.kld -> size PPL KLD same-top
  printf '%-28s %9s B  ' "$(basename "$1")" "$(stat -c %s "$1")"
  "$E" perplexity -m "$1" --kl-divergence --kl-divergence-base "$2" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("PPL %.4f  KLD %.6f +- %.6f  same top %.2f %%" % (d["ppl"], d["kld_mean"], d["kld_error"], 100*d["same_top"]))'
}

echo "== 1. our imatrix"
"$E" perplexity -m "$M" -f "$T" -c 128 --kl-divergence-base zh-f32.kld --json > /dev/null
"$E" imatrix -m "$M" -f "$T" -c 128 -o zh-imatrix.gguf 2> /dev/null

echo "== 2. weighted bytes: ours vs ggml's quantize_row_*_impl"
if [ -f "$bin/libggml-base.so" ]; then
  cc -O2 -I "$llama/src/ggml/include" "$root/scripts/ggml-quantize-file.c" -L "$bin" -lggml-base \
    -Wl,-rpath,"$bin" -o ggml-quantize-file
  for t in Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_S Q5_K_S Q6_K; do
    ./ggml-quantize-file "$M" "ggml-$t.gguf" "$t" zh-imatrix.gguf > /dev/null
    "$E" quantize "$M" "ours-$t.gguf" "$t" --pure --imatrix zh-imatrix.gguf > /dev/null 2>&1
    echo "$t: $(python3 "$root/scripts/gguf-tensor-diff.py" "ours-$t.gguf" "ggml-$t.gguf" | tail -1)"
  done
else
  echo "skipped: no $bin/libggml-base.so"
fi

for t in Q4_K_M Q4_0; do
  "$E" quantize "$M" "ours-$t.gguf" "$t" > /dev/null 2>&1
  "$E" quantize "$M" "ours-$t-imat.gguf" "$t" --imatrix zh-imatrix.gguf > /dev/null 2>&1
done
echo "== 3. llama-quantize with our imatrix"
if [ -x "$bin/llama-quantize" ]; then
  for t in Q4_K_M Q4_0; do
    "$bin/llama-quantize" "$M" "llama-$t.gguf" "$t" > "llama-$t.log" 2>&1
    "$bin/llama-quantize" --imatrix zh-imatrix.gguf "$M" "llama-$t-imat.gguf" "$t" > "llama-$t-imat.log" 2>&1
    for f in "ours-$t.gguf" "llama-$t.gguf" "ours-$t-imat.gguf" "llama-$t-imat.gguf"; do stats "$f" zh-f32.kld; done
    echo "$t with the imatrix, ours vs llama-quantize: $(python3 "$root/scripts/gguf-tensor-diff.py" "ours-$t-imat.gguf" "llama-$t-imat.gguf" | tail -1)"
    if [ -x "$bin/llama-perplexity" ]; then
      for f in "llama-$t-imat.gguf" "ours-$t-imat.gguf"; do
        echo "llama-perplexity $f: $("$bin/llama-perplexity" -m "$f" -f "$T" -c 128 -b 128 -t 2 2>&1 | grep -o 'Final estimate.*')"
      done
    fi
  done
else
  echo "skipped: no $bin/llama-quantize"
fi

echo "== 4. llama-imatrix's file, read by us"
if [ -x "$bin/llama-imatrix" ]; then
  "$bin/llama-imatrix" -m "$M" -f "$T" -c 128 -b 128 -t 2 -o llama-imatrix.gguf > llama-imatrix.log 2>&1
  "$bin/llama-imatrix" -m "$M" -f "$T" -c 128 -b 128 -t 2 --output-format dat -o llama-imatrix.dat > /dev/null 2>&1 || true
  "$E" imatrix --info llama-imatrix.gguf --compare zh-imatrix.gguf | tail -1
  [ -f llama-imatrix.dat ] && "$E" imatrix --info llama-imatrix.dat --compare zh-imatrix.gguf | tail -1
  "$E" quantize "$M" ours-Q4_K_M-llimat.gguf Q4_K_M --imatrix llama-imatrix.gguf > /dev/null 2>&1
  stats ours-Q4_K_M-llimat.gguf zh-f32.kld
else
  echo "skipped: no $bin/llama-imatrix"
fi

echo "== 5. mixed recipe at Q4_K_M's size"
ref=ours-Q4_K_M.gguf
[ -f llama-Q4_K_M.gguf ] && ref=llama-Q4_K_M.gguf
"$E" quantize "$M" zh-mix.gguf Q4_K_M --imatrix zh-imatrix.gguf --target-size "$(stat -c %s "$ref")" \
  --eval-text "$T" --eval-ctx 128 --save-sensitivity zh-sens.json --report zh-mix-report.json > zh-mix.log 2> zh-mix.err
"$E" quantize "$M" zh-mix-nll.gguf Q4_K_M --imatrix zh-imatrix.gguf --target-size "$(stat -c %s "$ref")" \
  --load-sensitivity zh-sens.json --objective kld+nll > zh-mix-nll.log 2>&1
for f in "$ref" zh-mix.gguf zh-mix-nll.gguf; do stats "$f" zh-f32.kld; done
# Held out: halves of ~2,450 tokens (A: documents 1-7 and the first half of document 8, B: the rest).
python3 - "$T" <<'PY'
import sys
docs = open(sys.argv[1], encoding="utf-8").read().split("\n%\n")
big = docs[7].split("\n")
before, after = sum(map(len, docs[:7])), sum(map(len, docs[8:]))
target = (before + after + sum(len(x) + 1 for x in big)) / 2 - before
c = 0
for k, line in enumerate(big, 1):
    c += len(line) + 1
    if c >= target:
        break
open("zhA.txt", "w", encoding="utf-8").write("\n%\n".join(docs[:7] + ["\n".join(big[:k])]) + "\n")
open("zhB.txt", "w", encoding="utf-8").write("\n%\n".join(["\n".join(big[k:])] + docs[8:]))
PY
"$E" perplexity -m "$M" -f zhB.txt -c 128 --kl-divergence-base zhB-f32.kld --json > /dev/null
"$E" imatrix -m "$M" -f zhA.txt -c 128 -o zhA-imatrix.gguf 2> /dev/null > /dev/null
"$E" quantize "$M" zhA-Q4_K_M-imat.gguf Q4_K_M --imatrix zhA-imatrix.gguf > /dev/null 2>&1
"$E" quantize "$M" zhA-mix.gguf Q4_K_M --imatrix zhA-imatrix.gguf --target-size "$(stat -c %s "$ref")" \
  --eval-text zhA.txt --eval-ctx 128 --save-sensitivity zhA-sens.json > zhA-mix.log 2> zhA-mix.err
"$E" quantize "$M" zhA-mix-nll.gguf Q4_K_M --imatrix zhA-imatrix.gguf --target-size "$(stat -c %s "$ref")" \
  --load-sensitivity zhA-sens.json --objective kld+nll > /dev/null 2>&1
echo "held out (imatrix and sensitivity on A, evaluated on B):"
for f in "$ref" zhA-Q4_K_M-imat.gguf zhA-mix.gguf zhA-mix-nll.gguf; do stats "$f" zhB-f32.kld; done
