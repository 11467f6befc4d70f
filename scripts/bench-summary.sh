#!/usr/bin/env bash
# The summary table and charts at the top of docs/benchmarks.md: every model shape, EdgeLLM
# against llama.cpp's llama-bench on the same files (pp512, tg128, 2 threads), EdgeLLM's warm
# TTFT of a 512-token prompt, and each engine's peak RSS; then the PNG chart and the table.
#
#   scripts/bench-summary.sh [--smoke] LLAMA_BENCH|- [BUILD_DIR] [MODEL_DIR] [OUT_DIR]
#
# LLAMA_BENCH: llama.cpp's llama-bench (scripts/build-llamacpp-reference.sh with
#   LLAMACPP_TARGETS=llama-bench), or - to leave llama.cpp out.
# MODEL_DIR: the files of scripts/bench-issue-models.sh (default ../bench-models); FILES (names
#   without .gguf) overrides the list. ROUNDS (default 2): rounds, each engine first in turn
#   (this machine's speed drifts: only interleaved runs compare).
# Writes OUT_DIR (default MODEL_DIR/summary): the JSON of every run, table.md, and
#   docs/images/bench-summary.png; then replaces the table between the markers
#   <!-- bench-summary:begin --> and <!-- bench-summary:end --> of docs/benchmarks.md with it,
#   machine, commit and command included.
# --smoke: the same on small files for checking the script itself (FILES from $SMOKE_MODELS,
#   -p 64 -n 16, 1 round), writing to OUT_DIR only, docs/ untouched.
# Takes ~25 minutes for the eleven default files on a quiet 2-core machine (20 for nine, measured
# 2026-12-07): run it when nothing else runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
smoke=0
if [[ "${1:-}" == "--smoke" ]]; then smoke=1; shift; fi
LLAMA_BENCH=${1:?usage: bench-summary.sh [--smoke] LLAMA_BENCH|- [BUILD_DIR] [MODEL_DIR] [OUT_DIR]}
BUILD=${2:-build}
MODELS=${3:-../bench-models}
OUT=${4:-$MODELS/summary}
ROUNDS=${ROUNDS:-2}
PP=512 TG=128 THREADS=${THREADS:-2}
FILES=${FILES:-"qwen2.5-0.5b-q4_0 qwen2.5-0.5b-q8_0 qwen2.5-0.5b-q4_K_M tinyllama-1.1b-q4_0 tinyllama-1.1b-q8_0
       tinyllama-1.1b-q4_K_M llama-3.2-1b-q4_0 qwen2.5-1.5b-q4_0 qwen2.5-1.5b-q4_K_M qwen3-0.6b-q4_0 qwen3-0.6b-q4_K_M"}
if ((smoke)); then
  PP=64 TG=16 ROUNDS=1
  FILES=${SMOKE_MODELS:?--smoke needs SMOKE_MODELS: paths of small .gguf files}
fi
mkdir -p "$OUT"
# KEEP=1: add FILES to the results already in OUT (a model shape added to the list) instead of
# starting over; the table and chart then cover every file measured there.
((${KEEP:-0})) || rm -f "$OUT"/edgellm-*.json "$OUT"/llamacpp-*.jsonl "$OUT"/ttft-*.json "$OUT"/rss-llamacpp.json

path_of() { [[ "$1" == */* || "$1" == *.gguf ]] && echo "$1" || echo "$MODELS/$1.gguf"; }
name_of() { basename "$(path_of "$1")" .gguf; }
# Peak RSS (bytes) of a command's process tree, from getrusage (no extra package needed).
peak_rss() {  # out_file cmd...
  local out=$1; shift
  python3 - "$out" "$@" <<'PY'
import resource, subprocess, sys
out = sys.argv[1]
with open(out, "w") as f:
    rc = subprocess.run(sys.argv[2:], stdout=f, stderr=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(rc)
PY
}
rss_json="{"
llamacpp() {  # file round
  local rss
  rss=$(peak_rss "$OUT/llamacpp-$(name_of "$1")-$2.jsonl" "$LLAMA_BENCH" -m "$(path_of "$1")" -p "$PP" -n "$TG" \
        -t "$THREADS" -r 3 -o jsonl)
  rss_json+="\"$(name_of "$1").gguf\": $rss, "
}
edgellm() {  # file round
  # --reprobe: each run compares with the bandwidth and int8 peak measured in its own minutes.
  "$BUILD/edgellm" bench -m "$(path_of "$1")" -p "$PP" -n "$TG" -t "$THREADS" -r 3 -o json --reprobe 2>/dev/null \
    >"$OUT/edgellm-$(name_of "$1")-$2.json"
}
for round in $(seq "$ROUNDS"); do
  for f in $FILES; do
    echo "$(date -u +%T) round $round $(name_of "$f")" >&2
    if [[ "$LLAMA_BENCH" == "-" ]]; then edgellm "$f" "$round"
    elif ((round % 2)); then llamacpp "$f" "$round"; edgellm "$f" "$round"
    else edgellm "$f" "$round"; llamacpp "$f" "$round"; fi
  done
done
for f in $FILES; do
  "$BUILD/edgellm" bench -m "$(path_of "$f")" --ttft --ttft-prompts "$PP" --ttft-warm-only -t "$THREADS" -r 3 -o json \
    2>/dev/null >"$OUT/ttft-$(name_of "$f").json"
done
python3 - "$OUT/rss-llamacpp.json" "${rss_json%, }}" <<'PY'
import json, os, sys
path, new = sys.argv[1], json.loads(sys.argv[2])
old = json.load(open(path)) if os.path.exists(path) else {}
old.update(new)
json.dump(old, open(path, "w"))
PY

chart="$OUT/bench-summary.png"
((smoke)) || chart="$root/docs/images/bench-summary.png"
mkdir -p "$(dirname "$chart")"
llama_args=()
[[ "$LLAMA_BENCH" == "-" ]] || llama_args=(--llamacpp "$OUT"/llamacpp-*.jsonl --rss-llamacpp "$OUT/rss-llamacpp.json")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
commit=$(git -C "$root" rev-parse --short HEAD)
python3 "$root/scripts/bench-chart.py" --bench "$OUT"/edgellm-*.json "${llama_args[@]}" --ttft "$OUT"/ttft-*.json \
  -o "$chart" --table "$OUT/table.md" --title "$cpu, $THREADS threads, commit $commit"
cat "$OUT/table.md"
((smoke)) && exit 0

# Replace the summary between the markers of docs/benchmarks.md.
{
  echo "Measured $(date -u +%F) on $cpu ($(nproc) cores), $THREADS threads, commit $commit, $ROUNDS interleaved rounds:"
  ((${KEEP:-0})) && echo "(this run added $(echo $FILES) to the results already in $OUT)"
  echo "\`scripts/bench-summary.sh $LLAMA_BENCH $BUILD $MODELS\`. Files: \`scripts/bench-issue-models.sh\` (synthetic"
  echo "weights of the real shapes; speed does not depend on the values)."
  echo
  cat "$OUT/table.md"
  echo
  echo "![pp and tg, EdgeLLM and llama.cpp](images/bench-summary.png)"
} >"$OUT/section.md"
python3 - "$root/docs/benchmarks.md" "$OUT/section.md" <<'PY'
import sys
doc, section = sys.argv[1], open(sys.argv[2]).read()
text = open(doc).read()
b, e = "<!-- bench-summary:begin -->", "<!-- bench-summary:end -->"
i, j = text.index(b) + len(b), text.index(e)
open(doc, "w").write(text[:i] + "\n" + section + text[j:])
PY
echo "bench-summary: docs/benchmarks.md and $chart updated" >&2
