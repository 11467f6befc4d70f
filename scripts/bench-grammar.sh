#!/usr/bin/env bash
# Structured-output decode cost, EdgeLLM against llama.cpp on the same file and schema, in one
# run (docs/benchmarks.md "Structured output"). ROUNDS rounds, each: one EdgeLLM pair
# (`edgellm bench-grammar --pairs 1`: a constrained generation of N tokens and an unconstrained
# one of as many) and one llama.cpp pair (llama-completion of the reference build with
# --json-schema-file, then --ignore-eos with the token count it produced), both at -t THREADS,
# temperature 1 without truncation (a random pick is almost always refused: full masks every
# token, the worst case for both check-first samplers). First, once: the schema's compile time
# and the mask time per token along random walks (`bench-grammar --pairs 0 --walks 20`). Prints
# one line per round and the medians with their range. Not a test; the machine's load goes into
# the numbers (pairs are interleaved).
#
# llama.cpp runs with OMP_WAIT_POLICY=PASSIVE unless the caller sets it: the reference build uses
# OpenMP, whose threads spin while they wait; with the cores shared (load ~10 on 2 cores) that
# made its decode 1,644 ms/token instead of 30 (synthetic Qwen2.5-0.5B Q4_K_M, 2 threads,
# 2026-12-06), which would measure the machine, not the sampler. EdgeLLM's pool does not spin.
#
#   scripts/bench-grammar.sh MODEL.gguf [SCHEMA.json] [ROUNDS] [N] [THREADS]
#   (defaults: tests/grammar/schemas/06-nested-order.json, 5, 128, 2; BUILD, LLAMACPP_DIR env)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=$(realpath "$1")
schema=$(realpath "${2:-$root/tests/grammar/schemas/06-nested-order.json}")
rounds=${3:-5}
n=${4:-128}
threads=${5:-2}
build=$(realpath "${BUILD:-$root/build}")
llama_dir=$(realpath -m "${LLAMACPP_DIR:-$root/../llamacpp-ref}")
completion=$(LLAMACPP_TARGETS=llama-completion "$root/scripts/build-llamacpp-reference.sh" "$llama_dir" | tail -1)
prompt="Reply with JSON:"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

llama_run() {  # args...; prints "tokens ms_per_token sampling_ms_per_token"
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} "$completion" -m "$model" -p "$prompt" -t "$threads" --temp 1 --top-k 0 --top-p 1 --min-p 0 -no-cnv --no-warmup \
    -c 4096 "$@" > "$tmp/out.txt" 2> "$tmp/err.txt" || { tail -5 "$tmp/err.txt" >&2; exit 1; }
  python3 - "$tmp/err.txt" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read()
ev = re.search(r"eval time =\s+([\d.]+) ms /\s+(\d+) runs", t.split("prompt eval time")[1])
sa = re.search(r"sampling time =\s+([\d.]+) ms", t)
runs = int(ev.group(2)); ms = float(ev.group(1)) + float(sa.group(1))
print(runs + 1, ms / max(runs, 1), float(sa.group(1)) / max(runs, 1))
PY
}

"$build/edgellm" bench-grammar -m "$model" --json-schema-file "$schema" --pairs 0 --walks 20 -t "$threads" \
  > "$tmp/masks.json"
python3 - "$tmp/masks.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = d["compile"]; m = d["mask"]; v = d["vocabulary"]
print(f"vocabulary {v['tokens']} tokens, view {v['build_ms']:.0f} ms | compile: schema->GBNF {c['schema_to_gbnf_ms']:.1f} ms, "
      f"automata {c['automaton_ms']:.1f} ms ({c['automaton_cpu_ms']:.1f} ms CPU), every state's mask "
      f"{c['all_masks_ms']:.0f} ms ({c['all_masks_cpu_ms']:.0f} ms CPU; lazily spread otherwise) | full mask per token: "
      f"mean {m['mean_ms']*1000:.1f} us, p95 {m['p95_ms']*1000:.1f} us, max {m['max_ms']*1000:.1f} us ({m['n']} tokens) | "
      f"one-token check mean {d['allows']['mean_us']:.1f} us")
PY
printf '%5s | %7s %9s %9s %7s %9s | %7s %9s %9s %7s %11s\n' round tokens "E cons" "E free" "E ratio" "E gram" \
  tokens "L cons" "L free" "L ratio" "L sampling"
for ((r = 0; r < rounds; r++)); do
  "$build/edgellm" bench-grammar -m "$model" --json-schema-file "$schema" -n "$n" --pairs 1 --walks 0 --no-lazy-run \
    -t "$threads" -p "$prompt" > "$tmp/e.json"
  read -r etok econ efree eratio egram < <(python3 -c "
import json,sys; d=json.load(open('$tmp/e.json')); p=d['pairs'][0]
print(p['tokens'], p['constrained_ms_per_token'], p['free_ms_per_token'], p['ratio'], p['grammar_ms_per_token'])")
  read -r ltok lcon lsamp < <(llama_run -n "$n" -s $((1000 + r)) --json-schema-file "$schema")
  read -r ltok2 lfree lsamp2 < <(llama_run -n "$((ltok - 1))" -s $((1000 + r)) --ignore-eos)
  lratio=$(python3 -c "print($lcon / $lfree)")
  printf '%5d | %7d %9.2f %9.2f %7.3f %9.3f | %7d %9.2f %9.2f %7.3f %5.2f/%5.2f\n' "$r" "$etok" "$econ" "$efree" "$eratio" \
    "$egram" "$ltok" "$lcon" "$lfree" "$lratio" "$lsamp" "$lsamp2"
  echo "$eratio $lratio $egram $lsamp $lsamp2" >> "$tmp/all.txt"
done
python3 - "$tmp/all.txt" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
med = lambda i: statistics.median(r[i] for r in rows)
rng = lambda i: f"[{min(r[i] for r in rows):.3f}, {max(r[i] for r in rows):.3f}]"
print(f"median of {len(rows)}: EdgeLLM constrained/free {med(0):.3f} {rng(0)}, grammar {med(2):.3f} ms/token | "
      f"llama.cpp constrained/free {med(1):.3f} {rng(1)}, sampling {med(3):.2f} ms/token with the grammar, "
      f"{med(4):.2f} without")
PY
