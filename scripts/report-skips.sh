#!/usr/bin/env bash
# The test cases a ctest run skipped (GTEST_SKIP), with their reasons, so that a claim this host
# could not check is in the CI log instead of hiding in a passing test (docs/testing.md, "What
# depends on the host"). ctest keeps every test's output in Testing/Temporary/LastTest.log,
# passing ones included; this reads it after each ctest call.
#
#   scripts/report-skips.sh collect BUILD_DIR LABEL   append this run's skips to BUILD_DIR/skipped.log
#   scripts/report-skips.sh print BUILD_DIR           print them (host-dependent ones first, loudly)
#
# A skip whose message starts with "NOT CHECKED ON THIS HOST" is a claim this machine cannot check
# (no AMX, no root for a full disk, ...); the others are by design in that configuration (a kernel
# an ISA pin does not have, a child-process-only case) and are listed on one line each.
set -euo pipefail

mode=${1:?usage: report-skips.sh collect|print BUILD_DIR [LABEL]}
build=${2:?build directory}
summary="$build/skipped.log"

case "$mode" in
  collect)
    label=${3:-ctest}
    log="$build/Testing/Temporary/LastTest.log"
    [[ -f $log ]] || { echo "report-skips: no $log" >&2; exit 1; }
    # Per test process: remember its ctest name; a "Skipped" line starts a reason that runs to the
    # gtest line "[  SKIPPED ] Suite.Case (N ms)".
    awk -v label="$label" '
      /^[0-9]+\/[0-9]+ Test: / { test = $3 }
      /: Skipped$/ { in_reason = 1; reason = ""; next }
      in_reason && /^\[  SKIPPED \] .* \([0-9]+ ms\)$/ {
        name = $4
        gsub(/\n+$/, "", reason)
        gsub(/\n/, " ", reason)
        printf "%s\t%s\t%s\t%s\n", label, test, name, reason
        in_reason = 0
        next
      }
      in_reason { reason = reason $0 "\n" }
    ' "$log" >>"$summary"
    ;;
  print)
    [[ -s $summary ]] || { echo "report-skips: no test case was skipped"; exit 0; }
    host=$(grep -c $'\tNOT CHECKED ON THIS HOST' "$summary" || true)
    if ((host > 0)); then
      echo
      echo "!!! NOT CHECKED ON THIS HOST: $host skipped test case(s) whose claims this machine cannot check"
      echo "!!! (docs/testing.md, \"What depends on the host\"; run make test where they can run):"
      grep $'\tNOT CHECKED ON THIS HOST' "$summary" | sort -u |
        awk -F'\t' '{ sub(/^NOT CHECKED ON THIS HOST: */, "", $4); printf "!!!   [%s] %s %s: %s\n", $1, $2, $3, $4 }'
      echo
    fi
    other=$(grep -vc $'\tNOT CHECKED ON THIS HOST' "$summary" || true)
    if ((other > 0)); then
      echo "Skipped by design in their configuration ($other):"
      grep -v $'\tNOT CHECKED ON THIS HOST' "$summary" | sort -u | awk -F'\t' '{ printf "  [%s] %s %s: %s\n", $1, $2, $3, $4 }'
    fi
    ;;
  *)
    echo "usage: report-skips.sh collect|print BUILD_DIR [LABEL]" >&2
    exit 2
    ;;
esac
