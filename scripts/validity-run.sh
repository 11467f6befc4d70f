#!/usr/bin/env bash
# Validity of JSON Schema constrained output (issue 38, docs/structured-output.md): for each
# schema of tests/grammar/schemas/ (12, of increasing difficulty) and each model, N outputs
# sampled at temperature 1.0 (no top-k / top-p / min-p) through `edgellm run --parallel` with
# --json-schema-file, then validated by python3-jsonschema (scripts/validate-json-outputs.py:
# every output must finish with "stop", parse, and validate, formats included).
#
#   scripts/validity-run.sh [N] [BUILD_DIR] [OUT_DIR]          (N default 1000)
#
# Models: stories260K and tiny-zh-poems from $EDGELLM_TESTDATA/models, and a synthetic
# Qwen2.5-0.5B (edgellm synth --shape qwen2.5-0.5b --type Q4_K_M with the real Qwen
# tokenizer.json, so the grammar works on the real 151,936-token vocabulary) written to OUT_DIR.
# VALIDITY_QWEN_LAYERS (default 24, the real depth) overrides its block count: the vocabulary is
# what matters to validity, the layers only to the time; VALIDITY_MODELS limits the models
# (space-separated: stories tiny-zh qwen), VALIDITY_PARALLEL the requests decoded at once (default 8),
# VALIDITY_THREADS the threads (default: edgellm run's), VALIDITY_SCHEMAS the schemas (a glob of their file names
# without .json, default *: e.g. '0[6-9]-* 1[0-2]-*' for the last seven). Prints one table row per (model, schema) and writes
# OUT_DIR/validity.jsonl. Exit status 0 only if every output of every run validates.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000}
build=$(realpath "${2:-$root/build}")
out=$(realpath -m "${3:-$root/build/validity}")
testdata=${EDGELLM_TESTDATA:-$root/../shared}
layers=${VALIDITY_QWEN_LAYERS:-24}
models=${VALIDITY_MODELS:-stories tiny-zh qwen}
parallel=${VALIDITY_PARALLEL:-8}
threads=${VALIDITY_THREADS:+-t $VALIDITY_THREADS}  # default: edgellm run's
mkdir -p "$out"
cli=$build/edgellm
[ -x "$cli" ] || cmake --build "$build" --target edgellm_cli
python3 -c 'import jsonschema' 2>/dev/null || { echo "validity-run: needs python3-jsonschema (scripts/install-deps.sh)" >&2; exit 1; }

qwen=$out/qwen2.5-0.5b-q4km-L$layers.gguf
if [[ " $models " == *" qwen "* && ! -f $qwen ]]; then
  "$cli" synth --shape qwen2.5-0.5b --type Q4_K_M --tokenizer "$testdata/testdata/tokenizers/qwen3/tokenizer.json" \
    --layers "$layers" -o "$qwen" -q
fi
prompts=$out/prompts.txt
for ((i = 0; i < n; i++)); do echo "Answer with one JSON value:"; done > "$prompts"

read -r -a schema_patterns <<< "${VALIDITY_SCHEMAS:-*}"  # read: no pathname expansion
status=0
: > "$out/validity.jsonl"
printf '%-14s %-28s %7s %7s %7s %7s %9s %8s\n' model schema outputs stopped parsed valid "tokens" "wall s"
for m in $models; do
  case $m in
    stories) model=$testdata/models/stories260K.gguf; ctx=4096; max=3000 ;;
    tiny-zh) model=$testdata/models/tiny-zh-poems.gguf; ctx=4096; max=3000 ;;
    qwen) model=$qwen; ctx=4096; max=2000 ;;
    *) echo "validity-run: unknown model $m" >&2; exit 2 ;;
  esac
  for schema in "$root"/tests/grammar/schemas/*.json; do
    name=$(basename "$schema" .json)
    selected=0
    for pattern in "${schema_patterns[@]}"; do
      # shellcheck disable=SC2053  # a glob on purpose
      [[ $name == $pattern ]] && selected=1
    done
    [ "$selected" = 1 ] || continue
    res=$out/$m-$name.jsonl
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086  # $threads is empty or "-t N"
    "$cli" run -m "$model" -f "$prompts" --parallel "$parallel" $threads --json --json-schema-file "$schema" \
      --temp 1 --top-k 0 --top-p 1 --min-p 0 -n "$max" -c "$ctx" --seed 1 > "$res" || true
    t1=$(date +%s.%N)
    verdict=$(python3 "$root/scripts/validate-json-outputs.py" "$schema" "$res") || status=1
    # The summary line by its key (an output's text may contain the word "summary").
    tokens=$(python3 -c "import json,sys; print([d['summary']['completion_tokens'] for d in map(json.loads, open(sys.argv[1])) if 'summary' in d][0])" "$res")
    python3 - "$m" "$name" "$verdict" "$tokens" "$t0" "$t1" "$out/validity.jsonl" <<'PY'
import json, sys
m, name, verdict, tokens, t0, t1, path = sys.argv[1:]
v = json.loads(verdict)
row = {"model": m, "schema": name, "outputs": v["outputs"], "stopped": v["stopped"], "parsed": v["parsed"],
       "valid": v["valid"], "completion_tokens": int(tokens), "wall_s": round(float(t1) - float(t0), 1),
       "failures": v["failures"]}
open(path, "a").write(json.dumps(row, ensure_ascii=False) + "\n")
print(f"{m:<14} {name:<28} {v['outputs']:>7} {v['stopped']:>7} {v['parsed']:>7} {v['valid']:>7} {int(tokens):>9} {row['wall_s']:>8}")
PY
  done
done
exit $status
