#!/usr/bin/env bash
# Long fuzzing run: every libFuzzer binary (fuzz_*) of a fuzz build, one after the other, each for
# HOURS hours (fractions allowed), starting from the kept corpus tests/fuzz/corpus/<target>/ plus
# the seeds the fuzzer writes itself; then the kept corpus is replaced by a minimised merge
# (libFuzzer -merge=1 -use_counters=0 into an empty directory: a small set of inputs that keeps
# every coverage edge of the old corpus and of this run; with hit counters as well, the merge
# kept 3-4x more files for the template targets). Prints a table: target, wall time, CPU
# time (user+sys: on a shared machine it can be far below wall time), executions, coverage
# (edges "cov" and features "ft" at the end), corpus files before -> after, findings.
#
#   scripts/fuzz-long.sh HOURS [BUILD_DIR]          (BUILD_DIR default build-fuzz: `make fuzz`)
#
# Environment: FUZZ_NICE (default 19), FUZZ_TARGETS (space-separated short names, default all),
# FUZZ_BUDGET (wall or cpu, see below), FUZZ_ROUND_SECONDS, FUZZ_TIMEOUT (seconds per input, 120),
# EDGELLM_TESTDATA (default ../shared). Findings (crash-*, leak-*, timeout-*, oom-* reproducers)
# are kept in BUILD_DIR/fuzz-artifacts/<fuzzer>/; reproduce one with
#   BUILD_DIR/fuzz_<target> BUILD_DIR/fuzz-artifacts/fuzz_<target>/crash-<sha1>
# and add it (or a unit test) as a regression test before fixing (docs/testing.md).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 HOURS [BUILD_DIR]" >&2
  exit 2
fi
hours=$1
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${2:-$root/build-fuzz}
export EDGELLM_TESTDATA=${EDGELLM_TESTDATA:-$root/../shared}
seconds=$(awk -v h="$hours" 'BEGIN { s = int(h * 3600); print (s < 1 ? 1 : s) }')
nice_level=${FUZZ_NICE:-19}
# FUZZ_BUDGET=wall (default): each target fuzzes for HOURS of wall time. FUZZ_BUDGET=cpu: until
# its fuzzer got HOURS of CPU time, in rounds of at most FUZZ_ROUND_SECONDS (default 900) of
# wall time - on a shared machine under nice a wall-time hour can be minutes of fuzzing.
budget_kind=${FUZZ_BUDGET:-wall}
round_seconds=${FUZZ_ROUND_SECONDS:-900}
# libFuzzer's -timeout is wall time per input: at nice 19 on a busy machine a 2 s input was
# starved to 21 s and reported as a timeout. 120 s still catches a real hang.
timeout=${FUZZ_TIMEOUT:-120}
case $budget_kind in wall|cpu) ;; *) echo "fuzz-long: FUZZ_BUDGET must be wall or cpu" >&2; exit 2 ;; esac
max_len=65536

mapfile -t fuzzers < <(find "$build_dir" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x | sort)
if [[ ${#fuzzers[@]} -eq 0 ]]; then
  echo "fuzz-long: no fuzz_* executables in $build_dir (make fuzz builds them)" >&2
  exit 1
fi

# Reproducers of crashes, leaks, timeouts and out-of-memory inputs. Not slow-unit-* files:
# libFuzzer times inputs in wall time, and a fuzzer at nice 19 on a busy machine is starved for
# seconds at a time (a template input reported "slow" took 0.3 s when re-run); -timeout still
# catches inputs that really hang, and -report_slow_units is set out of the way.
count_findings() { find "$1" -type f ! -name 'slow-unit-*' | wc -l; }

work=$(mktemp -d "${TMPDIR:-/tmp}/edgellm-fuzz-long-XXXXXX")
trap 'rm -rf "$work"' EXIT
rows=()
total_findings=0
for bin in "${fuzzers[@]}"; do
  name=$(basename "$bin")
  short=${name#fuzz_}
  if [[ -n ${FUZZ_TARGETS:-} && " $FUZZ_TARGETS " != *" $short "* ]]; then continue; fi
  kept=$root/tests/fuzz/corpus/$short
  corpus=$work/$short
  artifacts=$build_dir/fuzz-artifacts/$name
  mkdir -p "$kept" "$corpus" "$artifacts"
  before=$(find "$kept" -type f | wc -l)
  cp -r "$kept/." "$corpus/"
  EDGELLM_FUZZ_SEED_DIR=$corpus "$bin" -runs=0 -max_len=$max_len "$corpus" > "$work/$short-seed.log" 2>&1 || true
  findings_before=$(count_findings "$artifacts")

  echo "fuzz-long: $name for ${seconds}s of $budget_kind from $(find "$corpus" -type f | wc -l) inputs (nice $nice_level)" >&2
  # One libFuzzer session per round. With FUZZ_BUDGET=cpu the rounds repeat until the fuzzer
  # processes got `seconds` of CPU time (user+sys); each round starts from the corpus the
  # previous ones grew, so only libFuzzer's in-memory state (mutation dictionary) restarts.
  TIMEFORMAT='%R %U %S'
  wall=0; cpu=0; runs=0; round=0
  : > "$work/$short.log"
  while :; do
    round=$((round + 1))
    if [[ $budget_kind == cpu ]]; then
      left=$(awk -v s="$seconds" -v c="$cpu" 'BEGIN { l = int(s - c + 0.999); print (l < 1 ? 1 : l) }')
      chunk=$(( left < round_seconds ? left : round_seconds ))
    else
      chunk=$seconds
    fi
    { time nice -n "$nice_level" "$bin" "$corpus" -max_total_time="$chunk" -max_len=$max_len -rss_limit_mb=2048 \
        -timeout=$timeout -report_slow_units=100000 -print_final_stats=1 -artifact_prefix="$artifacts/" > "$work/$short.round.log" 2>&1 || true; } \
        2> "$work/$short.time"
    cat "$work/$short.round.log" >> "$work/$short.log"
    read -r w u s < "$work/$short.time"
    wall=$(awk -v a="$wall" -v b="$w" 'BEGIN { print a + b }')
    cpu=$(awk -v a="$cpu" -v u="$u" -v s="$s" 'BEGIN { print a + u + s }')
    r=$(grep -E '^stat::number_of_executed_units' "$work/$short.round.log" | awk '{print $2}' | tail -1)
    runs=$(( runs + ${r:-0} ))
    # A finding stops libFuzzer; stop the rounds too, so the reproducer is looked at first.
    (( $(count_findings "$artifacts") == findings_before )) || break
    [[ $budget_kind == cpu ]] || break
    awk -v s="$seconds" -v c="$cpu" 'BEGIN { exit !(c >= s) }' && break
    echo "fuzz-long: $name round $round: ${cpu%.*}s of ${seconds}s CPU so far" >&2
  done
  # The last status line ("#N ... cov: E ft: F corp: ...") holds the final coverage.
  status=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$work/$short.log" | tail -1 || true)
  cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<< "$status")
  ft=$(sed -E 's/.*ft: ([0-9]+).*/\1/' <<< "$status")
  findings=$(( $(count_findings "$artifacts") - findings_before ))
  total_findings=$(( total_findings + findings ))
  if (( findings > 0 )); then
    echo "fuzz-long: $name: $findings finding(s) in $artifacts:" >&2
    grep -E 'ERROR|SUMMARY|invariant|Test unit written' "$work/$short.log" | head -20 >&2 || true
  fi

  # Minimise: the smallest set covering the old kept corpus and everything this run found.
  merged=$work/$short-merged
  mkdir -p "$merged"
  nice -n "$nice_level" "$bin" -merge=1 -use_counters=0 -max_len=$max_len -rss_limit_mb=2048 -timeout=$timeout "$merged" "$kept" "$corpus" \
      > "$work/$short-merge.log" 2>&1 || { echo "fuzz-long: merge failed for $name" >&2; tail -20 "$work/$short-merge.log" >&2; continue; }
  rm -f "$kept"/*
  cp "$merged"/* "$kept"/ 2>/dev/null || true
  after=$(find "$kept" -type f | wc -l)
  rows+=("$(printf '| %s | %.0f | %.0f | %s | %s | %s | %s -> %s | %s |' "$short" "$wall" "$cpu" \
      "${runs:-?}" "${cov:-?}" "${ft:-?}" "$before" "$after" "$findings")")
done

echo
echo "| target | wall s | CPU s | runs | cov | ft | corpus files | findings |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|"
printf '%s\n' "${rows[@]}"
(( total_findings == 0 )) || exit 1
