#!/usr/bin/env bash
# Runs make targets one after the other (what `make test` is), stopping at the first failure, and
# prints how long each took — so a CI log says where its minutes went (docs/testing.md, "Measured
# times") and which step failed.
#
#   scripts/run-steps.sh STEP...        (MAKE: the make to call, default make)
set -uo pipefail

make_cmd=${MAKE:-make}
rows=()
total_start=$(date +%s)
status=0
for step in "$@"; do
  start=$(date +%s)
  echo "==== make $step"
  "$make_cmd" --no-print-directory "$step"
  status=$?
  rows+=("$(printf '%-16s %5d s  %s' "$step" $(($(date +%s) - start)) "$([[ $status == 0 ]] && echo ok || echo "FAILED (exit $status)")")")
  ((status == 0)) || break
done
echo "==== steps (wall time)"
printf '%s\n' "${rows[@]}"
printf '%-16s %5d s\n' total $(($(date +%s) - total_start))
exit "$status"
