#!/usr/bin/env bash
# Runs every libFuzzer binary (fuzz_*) in a build directory for a bounded time and fails if any
# of them finds a crash, leak, timeout or out-of-memory.
#
#   scripts/run-fuzzers.sh BUILD_DIR
#
# Environment:
#   FUZZ_SECONDS   total fuzzing time, split evenly across the fuzzers (default 66: 6 s each for 11;
#                  CI's smoke run beside the kept corpus, which is the regression guard; the long
#                  runs are scripts/fuzz-long.sh, their CPU hours in docs/testing.md, "Fuzzing")
#   FUZZ_JOBS      fuzzers run at the same time (default: the number of cores, so 66 s of fuzzing
#                  take 33 s of wall time on 2 cores; each fuzzer is one process)
#   EDGELLM_TESTDATA  the shared/ folder (default ../shared): real GGUF files become seeds, and
#                  fuzz_chat_messages renders the chat templates of testdata/tokenizers/*
#
# Corpus (a temporary copy, so a CI run never changes the checkout):
#   - tests/fuzz/corpus/<name>/ (without the fuzz_ prefix): the kept, minimised corpus that
#     scripts/fuzz-long.sh grows; it also holds the reproducers of past findings, so every one of
#     them runs again here (the -runs=0 pass fails on any crash);
#   - every fuzzer is first run with EDGELLM_FUZZ_SEED_DIR=<corpus> -runs=0: fuzzers that define
#     LLVMFuzzerInitialize write small well-formed inputs there (fuzz_gguf_reader writes valid
#     GGUF files made by GgufWriter, fuzz_model_load tiny models, fuzz_json a few documents);
#   - fuzz_gguf_reader also gets the first 64 KiB of stories260K.gguf (the whole header: 19 KVs,
#     48 tensor infos) and a few shorter prefixes of it.
# Crash reproducers are kept in BUILD_DIR/fuzz-artifacts/<fuzzer>/.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)
export EDGELLM_TESTDATA=${EDGELLM_TESTDATA:-$root/../shared}
testdata=$EDGELLM_TESTDATA
total_seconds=${FUZZ_SECONDS:-66}
max_len=65536

mapfile -t fuzzers < <(find "$build_dir" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x | sort)
if [[ ${#fuzzers[@]} -eq 0 ]]; then
  echo "run-fuzzers: no fuzz_* executables in $build_dir (configure with -DEDGELLM_FUZZ=ON)" >&2
  exit 1
fi

per_fuzzer=$(( total_seconds / ${#fuzzers[@]} ))
(( per_fuzzer < 1 )) && per_fuzzer=1

work=$(mktemp -d "${TMPDIR:-/tmp}/edgellm-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT

# One fuzzer: seeds, then the timed run. Prints its report to $work/<short>.out and leaves
# $work/<short>.failed on a finding (run as a background job: no shared variables).
run_one() {
  local bin=$1
  local name short corpus artifacts
  name=$(basename "$bin")
  short=${name#fuzz_}
  corpus=$work/$short
  artifacts=$build_dir/fuzz-artifacts/$name
  mkdir -p "$corpus" "$artifacts"

  if [[ -d $root/tests/fuzz/corpus/$short ]]; then
    cp -r "$root/tests/fuzz/corpus/$short/." "$corpus/"
  fi
  if [[ $short == gguf_reader ]]; then
    model=$testdata/models/stories260K.gguf
    if [[ -f $model ]]; then
      head -c "$max_len" "$model" > "$corpus/stories260K-head.gguf"
      for n in 24 200 1000 4096 14176; do
        head -c "$n" "$model" > "$corpus/stories260K-prefix-$n.gguf"
      done
    else
      echo "run-fuzzers: $model not found (set EDGELLM_TESTDATA); using generated seeds only" >&2
    fi
  fi
  # Let the fuzzer write its own seeds (LLVMFuzzerInitialize) and check they all run cleanly.
  EDGELLM_FUZZ_SEED_DIR=$corpus "$bin" -runs=0 -max_len=$max_len "$corpus" > "$work/$short-seed.log" 2>&1 || {
    echo "run-fuzzers: $name failed on its seed corpus:"
    tail -n 40 "$work/$short-seed.log"
    touch "$work/$short.failed"
    return
  }

  echo "run-fuzzers: $name for ${per_fuzzer}s ($(ls "$corpus" | wc -l) seeds)"
  if ! "$bin" "$corpus" -max_total_time="$per_fuzzer" -max_len=$max_len -rss_limit_mb=2048 -timeout=20 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" > "$work/$short.log" 2>&1; then
    echo "run-fuzzers: $name FAILED; reproducer(s) in $artifacts:"
    tail -n 60 "$work/$short.log"
    touch "$work/$short.failed"
  else
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/$short.log" | sed "s/^/  $name /" || true
  fi
}

parallel=${FUZZ_JOBS:-$(nproc)}
for bin in "${fuzzers[@]}"; do
  while (( $(jobs -rp | wc -l) >= parallel )); do wait -n || true; done
  short=$(basename "$bin"); short=${short#fuzz_}
  run_one "$bin" > "$work/$short.out" 2>&1 &
done
wait
failed=()
for bin in "${fuzzers[@]}"; do
  short=$(basename "$bin"); short=${short#fuzz_}
  cat "$work/$short.out"
  [[ -e $work/$short.failed ]] && failed+=("fuzz_$short")
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run-fuzzers: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzzers: ${#fuzzers[@]} fuzzer(s) ran without findings"
