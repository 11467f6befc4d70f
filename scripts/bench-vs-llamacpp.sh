#!/usr/bin/env bash
# Same machine, same files, same threads: `llama-bench` (see build-llamacpp-reference.sh) against
# `edgellm bench`, pp512 and tg128 with 2 threads, on the nine files of issue 4's table.
#
# This machine's speed drifts by tens of percent over minutes (shared host), so a comparison
# means something only when the two engines run interleaved: per file, one engine then the other,
# and the next round in the opposite order. The table averages the rounds.
#
#   scripts/bench-vs-llamacpp.sh LLAMA_BENCH [BUILD_DIR] [MODEL_DIR] [OUT_DIR] [ROUNDS]
#
# MODEL_DIR: the files written by bench-issue-models.sh (default ../bench-models). FILES (names
# without .gguf) overrides the list.
set -euo pipefail
LLAMA_BENCH=$1
BUILD=${2:-build}
MODELS=${3:-../bench-models}
OUT=${4:-$MODELS/vs-llamacpp}
ROUNDS=${5:-2}
FILES=${FILES:-"qwen2.5-0.5b-q4_0 qwen2.5-0.5b-q8_0 qwen2.5-0.5b-q4_K_M tinyllama-1.1b-q4_0 tinyllama-1.1b-q8_0
       tinyllama-1.1b-q4_K_M llama-3.2-1b-q4_0 qwen2.5-1.5b-q4_0 qwen2.5-1.5b-q4_K_M"}
command -v python3 >/dev/null || { apt-get update -qq && apt-get install -y -qq python3-minimal >/dev/null; }
mkdir -p "$OUT"
rm -f "$OUT"/llamacpp-*.jsonl "$OUT"/edgellm-*.json

llamacpp() {  # file round
  "$LLAMA_BENCH" -m "$MODELS/$1.gguf" -p 512 -n 128 -t 2 -r 3 -o jsonl 2>/dev/null >"$OUT/llamacpp-$1-$2.jsonl"
}
edgellm() {  # file round
  "$BUILD/edgellm" bench -m "$MODELS/$1.gguf" -p 512 -n 128 -t 2 -r 3 -o json 2>/dev/null >"$OUT/edgellm-$1-$2.json"
}
for round in $(seq "$ROUNDS"); do
  for f in $FILES; do
    echo "$(date -u +%T) round $round $f" >&2
    if [ $((round % 2)) = 1 ]; then llamacpp "$f" "$round"; edgellm "$f" "$round"
    else edgellm "$f" "$round"; llamacpp "$f" "$round"; fi
  done
done

python3 - "$OUT" $FILES <<'EOF'
# One row per file: each engine's mean over the rounds (the rounds' values in brackets), the
# ratio EdgeLLM / llama.cpp, and EdgeLLM's decode as a fraction of the bandwidth probed around it.
import glob, json, statistics, sys
out, files = sys.argv[1], sys.argv[2:]
def records(pattern, jsonl):
    recs = []
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            recs += [json.loads(l) for l in f if l.strip()] if jsonl else json.load(f)
    return recs
print("| file | llama.cpp pp512 | EdgeLLM pp512 | x | llama.cpp tg128 | EdgeLLM tg128 | x | EdgeLLM tg128 % bw now |")
print("|---|--:|--:|--:|--:|--:|--:|--:|")
for f in files:
    l = records(f"{out}/llamacpp-{f}-*.jsonl", True)
    e = records(f"{out}/edgellm-{f}-*.json", False)
    cells = []
    for p, g in ((512, 0), (0, 128)):
        a = [r["avg_ts"] for r in l if r["n_prompt"] == p and r["n_gen"] == g]
        b = [r["avg_ts"] for r in e if r["n_prompt"] == p and r["n_gen"] == g]
        if not a or not b:
            cells += ["-"] * 3
            continue
        span = lambda v: f"{statistics.mean(v):.1f} ({', '.join(f'{x:.1f}' for x in v)})"
        cells += [span(a), span(b), f"{statistics.mean(b) / statistics.mean(a):.2f}"]
    fr = [r["bandwidth_now_fraction"] for r in e if r["n_gen"] == 128 and r.get("bandwidth_now_fraction")]
    cells.append(", ".join(f"{100 * x:.0f}%" for x in fr) or "-")
    print(f"| {f} | " + " | ".join(cells) + " |")
EOF
