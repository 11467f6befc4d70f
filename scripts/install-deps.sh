#!/usr/bin/env bash
# Installs the Debian packages EdgeLLM needs to build and test. Safe to re-run: apt-get runs
# only when something is missing. Usage: scripts/install-deps.sh [--arm64] [--server-tests] [--eval-tools]
set -euo pipefail

# musl-dev, libc++-14-dev, libc++abi-14-dev: scripts/check-musl.sh (HarmonyOS / musl check).
# libcurl4-openssl-dev: the CLI's resumable model downloads (src/tools/fetch, edgellm registry install URL).
# pkg-config, libcpp-httplib-dev, libboost-dev: `edgellm serve` (src/server, not the shipped library):
# Boost.Beast / Boost.Asio (headers only) for its HTTP transport, cpp-httplib for the router's
# cloud client and the server tests' client.
# lld: the linker of the sanitizer and fuzz builds of `make test` (EDGELLM_LINKER, Makefile SAN_FLAGS).
# python3-jsonschema: the independent validator of constrained JSON output
# (grammar_test_schema_validity, scripts/validate-json-outputs.py).
packages=(cmake ninja-build g++ clang libclang-rt-14-dev googletest libgtest-dev curl ca-certificates libcurl4-openssl-dev
  musl-dev libc++-14-dev libc++abi-14-dev pkg-config libcpp-httplib-dev libboost-dev python3 python3-jsonschema lld)
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

missing=()
for p in "${packages[@]}"; do
  grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
done
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
