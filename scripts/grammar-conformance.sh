#!/usr/bin/env bash
# Grammar conformance against llama.cpp (issue 38): for each grammar, N strings -- random
# sentences of the grammar, every other one mutated by one code point -- are judged by EdgeLLM's
# engine (build/edgellm_grammar_conformance verdicts: the byte-level matcher every token goes
# through) and by llama.cpp's grammar engine (llama-grammar.cpp of the reference build, driven by
# scripts/llamacpp-gbnf-check.cpp like test-gbnf-validator), and the decisions are compared.
#
#   scripts/grammar-conformance.sh [N] [BUILD_DIR] [LLAMACPP_DIR]    (N 10000, build, ../llamacpp-ref)
#
# Grammars: llama.cpp's own grammars/*.gbnf (read from the reference checkout, not copied), the
# grammars of tests/grammar/test_grammars.h and the GBNF of the 12 schemas of
# tests/grammar/schemas/. Prints a table (grammar, strings, accepted, disagreements) and exits 1
# on any disagreement. With CI_UPDATE=1 it also rewrites tests/grammar/conformance/<name>.txt:
# the first CI_N (default 300) strings of every grammar that lives in this repository, with
# llama.cpp's verdict -- what grammar_test_conformance checks on every CI run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-10000}
build=$(realpath "${2:-$root/build}")
llama_dir=$(realpath -m "${3:-$root/../llamacpp-ref}")
ci_n=${CI_N:-300}
LLAMACPP_TARGETS=llama "$root/scripts/build-llamacpp-reference.sh" "$llama_dir" > /dev/null
src=$llama_dir/src
check=$llama_dir/llamacpp-gbnf-check
if [ ! -x "$check" ] || [ "$root/scripts/llamacpp-gbnf-check.cpp" -nt "$check" ]; then
  g++ -std=c++17 -O2 -I "$src/src" -I "$src/include" -I "$src/ggml/include" "$root/scripts/llamacpp-gbnf-check.cpp" \
    -L "$src/build/bin" -lllama -Wl,-rpath,"$src/build/bin" -o "$check"
fi
tool=$build/edgellm_grammar_conformance
[ -x "$tool" ] || cmake --build "$build" --target edgellm_grammar_conformance
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/g"
for f in "$src"/grammars/*.gbnf; do cp "$f" "$work/g/llamacpp-$(basename "$f")"; done
"$tool" test-grammars "$work/g"
for s in "$root"/tests/grammar/schemas/*.json; do "$tool" schema "$s" > "$work/g/schema-$(basename "$s" .json).gbnf"; done

status=0
printf '%-36s %8s %9s %9s %13s\n' grammar strings accepted rejected disagreements
for g in "$work"/g/*.gbnf; do
  name=$(basename "$g" .gbnf)
  "$tool" strings "$g" "$n" 1 > "$work/s.txt"
  "$tool" verdicts "$g" "$work/s.txt" > "$work/ours.txt"
  if ! "$check" "$g" "$work/s.txt" > "$work/theirs.txt" 2> "$work/err.txt"; then
    echo "$name: llama.cpp refused the grammar: $(tail -c 300 "$work/err.txt")" >&2
    status=1
    continue
  fi
  acc=$(grep -c '^1$' "$work/theirs.txt" || true)
  diff_n=$(paste "$work/ours.txt" "$work/theirs.txt" | awk '$1 != $2' | wc -l)
  printf '%-36s %8d %9d %9d %13d\n' "$name" "$n" "$acc" $((n - acc)) "$diff_n"
  if [ "$diff_n" -ne 0 ]; then
    status=1
    paste "$work/s.txt" "$work/ours.txt" "$work/theirs.txt" | awk '$2 != $3 && shown++ < 3' >&2
  fi
  if [ "${CI_UPDATE:-0}" = 1 ] && [[ $name != llamacpp-* ]]; then
    mkdir -p "$root/tests/grammar/conformance"
    paste -d ' ' "$work/s.txt" "$work/theirs.txt" | awk -v n="$ci_n" 'NR <= n' > "$root/tests/grammar/conformance/$name.txt"
  fi
done
exit $status
