#!/usr/bin/env bash
# Fetches what the later steps of `make test` need while the first step builds (Makefile, target
# test): on a fresh CI machine the Debian packages of the ARM64, musl and server-test steps
# (the aarch64 cross compiler, qemu, Chromium: most of the download) and the npm packages of
# the NAPI and server tests cost minutes of network and unpacking that would otherwise sit
# between builds. Nothing here is required: each step still runs its own install, which finds
# the packages present (install-deps.sh waits on its lock while this one installs) and npm
# installs from the warmed cache. Output goes to the log named by the caller.
#   scripts/prefetch-deps.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
status=0
"$root/scripts/install-deps.sh" --arm64 --server-tests || status=$?
# npm's cache (~/.npm) is shared and safe for concurrent use: installing each lock file once into
# a scratch directory leaves every tarball the steps' `npm ci` asks for in it.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for dir in bindings/napi tests/server/node; do
  mkdir -p "$scratch/$dir"
  cp "$root/$dir/package.json" "$root/$dir/package-lock.json" "$scratch/$dir/"
  (cd "$scratch/$dir" && npm ci --ignore-scripts --no-audit --no-fund) || status=$?
done
mkdir -p "$scratch/ohos"
cp "$root/bindings/ohos/tools/package.json" "$scratch/ohos/"
(cd "$scratch/ohos" && npm install --ignore-scripts --no-package-lock --no-audit --no-fund) || status=$?
echo "prefetch-deps: done (exit $status)"
exit "$status"
