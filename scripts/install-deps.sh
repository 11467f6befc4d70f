#!/usr/bin/env bash
# Installs the Debian packages EdgeLLM needs to build and test. Safe to re-run: apt-get runs
# only when something is missing. Usage:
#   scripts/install-deps.sh [--build-only] [--arm64] [--server-tests] [--eval-tools]
# --build-only: just what the plain build and its tests need (make build / demo / test-unit), so
# `make test` can start building while the rest installs in the background
# (scripts/prefetch-deps.sh).
set -euo pipefail

# musl-dev, libc++-14-dev, libc++abi-14-dev: scripts/check-musl.sh (HarmonyOS / musl check).
# libcurl4-openssl-dev: the CLI's resumable model downloads (src/tools/fetch, edgellm registry install URL).
# pkg-config, libcpp-httplib-dev, libboost-dev: `edgellm serve` (src/server, not the shipped library):
# Boost.Beast / Boost.Asio (headers only) for its HTTP transport, cpp-httplib for the router's
# cloud client and the server tests' client.
# lld: the linker of the sanitizer and fuzz builds of `make test` (EDGELLM_LINKER, Makefile SAN_FLAGS).
# python3-jsonschema: the independent validator of constrained JSON output
# (grammar_test_schema_validity, scripts/validate-json-outputs.py).
packages=(cmake ninja-build g++ clang googletest libgtest-dev curl ca-certificates libcurl4-openssl-dev
  pkg-config libcpp-httplib-dev libboost-dev python3 python3-jsonschema)
# The sanitizer, fuzz and musl steps: lld, clang's sanitizer runtimes and libFuzzer, musl + libc++.
[[ " $* " == *" --build-only "* ]] || packages+=(libclang-rt-14-dev musl-dev libc++-14-dev libc++abi-14-dev lld)
# --server-tests (make test-server): headless Chromium for the chat page test; Node.js + npm
# for the openai-client and page tests when no node is installed.
if [[ " $* " == *" --server-tests "* ]]; then
  packages+=(chromium)
  command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
fi
# --eval-tools (not needed by `make test`): python3-nltk for scripts/eval-metric-reference.py
# (the BLEU reference of tests/eval/data/metric-golden.json), python3-matplotlib for
# scripts/eval-chart.py (the PNG of an `edgellm eval` report). Debian's /usr/bin/python3 runs them.
if [[ " $* " == *" --eval-tools "* ]]; then
  packages+=(python3 python3-nltk python3-matplotlib)
fi
if [[ " $* " == *" --arm64 "* || "${EDGELLM_ARM64:-0}" == "1" ]]; then
  # musl-dev:arm64 gives check-musl.sh the aarch64 musl headers (needs the arm64 dpkg architecture).
  packages+=(g++-aarch64-linux-gnu qemu-user-static musl-dev:arm64)
fi

# Node.js + npm: the NAPI addon's tests (make test-napi). Only when no node is installed at all
# (a Node.js from elsewhere, e.g. NodeSource, ships its own npm and headers).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

find_missing() {
  missing=()
  local p
  for p in "${packages[@]}"; do
    grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
  done
}
find_missing
# One install at a time: `make test` installs the later steps' packages in the background while
# the first build runs (scripts/prefetch-deps.sh), and apt / dpkg refuse a second concurrent run.
# A call whose packages are all there returns without waiting (a package still being unpacked
# reads as missing, so its step waits here until the install is done).
if ((${#missing[@]})); then
  exec 9>"${TMPDIR:-/tmp}/edgellm-install-deps.lock"
  flock 9
  find_missing
fi
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  if [[ " ${missing[*]} " == *:arm64\ * ]] && ! grep -qx arm64 <<<"$(dpkg --print-foreign-architectures)"; then
    $SUDO dpkg --add-architecture arm64
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
