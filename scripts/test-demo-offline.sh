#!/usr/bin/env bash
# ctest tools_test_demo_offline: `make demo`'s run step (scripts/demo.sh) with the network cut, as a
# newcomer on a plane meets it (issue 42): a new network namespace holds only a down loopback, so
# any download or socket would fail. Passes when the demo streams a story from the model kept in
# the repository and prints its time to first token, speed, peak memory and the next steps.
# Usage: scripts/test-demo-offline.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: test-demo-offline.sh BUILD_DIR}" && pwd)
fail() { echo "test-demo-offline: FAIL: $*" >&2; exit 1; }

# Root may unshare the network alone; an unprivileged user needs a user namespace too (-r).
cut=()
if unshare -n true 2>/dev/null; then cut=(unshare -n)
elif unshare -rn true 2>/dev/null; then cut=(unshare -rn)
else
  # In gtest's shape, so scripts/report-skips.sh lists it with the other host-dependent skips.
  echo "scripts/test-demo-offline.sh: Skipped"
  echo "NOT CHECKED ON THIS HOST: no network namespace (unshare -n / -rn refused): the demo was not run offline"
  echo "[  SKIPPED ] DemoOffline.StreamsWithTheNetworkCut (0 ms)"
  exit 77
fi
# Inside, no interface but the loopback (down): prove it before trusting the run.
ifaces=$("${cut[@]}" awk 'NR > 2 { printf "%s ", $1 }' /proc/self/net/dev)
[[ "$ifaces" == "lo: " ]] || fail "the namespace has interfaces: $ifaces"

out=$(cd "$root" && env -u EDGELLM_MODEL "${cut[@]}" scripts/demo.sh "$build" 2>&1) || { echo "$out" >&2; fail "demo.sh exited $?"; }
grep -q "assets/models/tinytales.gguf" <<<"$out" || { echo "$out" >&2; fail "not the model kept in the repository"; }
grep -q "^Once upon a time," <<<"$out" || { echo "$out" >&2; fail "no streamed story"; }
for want in "prompt:" "decode:" "peak RSS:" "== Next"; do
  grep -q "$want" <<<"$out" || { echo "$out" >&2; fail "no '$want' line"; }
done
# The story itself: at least 30 words after the prompt (the model writes readable English).
words=$(sed -n '/^Once upon a time,/p' <<<"$out" | wc -w)
((words >= 30)) || { echo "$out" >&2; fail "the story has $words words"; }
echo "test-demo-offline: ok: streamed $words words offline (${cut[*]})"
