#!/usr/bin/env bash
# Builds the reference engine of issue 4 — llama.cpp's `llama-bench`, compiled natively
# (-march=native: AVX-512 / VNNI here) — on a machine whose only network is the npm registry.
#
# Where the source comes from: the npm package `node-llama-cpp` ships the llama.cpp release it
# binds as a git bundle (`llama/gitRelease.bundle`) for offline source builds. We clone that
# bundle and build only `llama-bench` (or the targets of LLAMACPP_TARGETS: "llama-quantize", or
# the library "ggml-base" for scripts/llamacpp-quant-reference.sh); nothing of it enters EdgeLLM.
#
#   [LLAMACPP_TARGETS="llama-bench llama-quantize"] scripts/build-llamacpp-reference.sh [DIR]
#                                                  (DIR default ../llamacpp-ref, outside the repo)
#
# Prints the path of each target, one per line. ~5 minutes on 2 cores for llama-bench (niced:
# LLAMACPP_NICE, default 19). Not a test and not run by CI.
set -euo pipefail
DIR=$(realpath -m "${1:-../llamacpp-ref}")
read -r -a TARGETS <<< "${LLAMACPP_TARGETS:-llama-bench}"
VERSION=3.22.1  # node-llama-cpp release; its bundle is llama.cpp tag v0.5.0 (commit de3ff81)
mkdir -p "$DIR"
cd "$DIR"

missing=()
built() { [ -x "src/build/bin/$1" ] || [ -f "src/build/bin/lib$1.so" ]; }  # executable or library
for t in "${TARGETS[@]}"; do built "$t" || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  need() {  # command, Debian package
    command -v "$1" >/dev/null && return 0
    [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq; APT_UPDATED=1; }
    apt-get install -y -qq --no-install-recommends "$2" >/dev/null
  }
  need npm npm
  need ninja ninja-build
  need git git
  if [ ! -d src ]; then
    [ -f node-llama-cpp-$VERSION.tgz ] || npm pack --silent "node-llama-cpp@$VERSION" >/dev/null
    tar xzf node-llama-cpp-$VERSION.tgz package/llama/gitRelease.bundle
    git -c advice.detachedHead=false clone -q package/llama/gitRelease.bundle src
  fi
  cmake -S src -B src/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_OPENSSL=OFF >/dev/null
  nice -n "${LLAMACPP_NICE:-19}" ninja -C src/build -j "${LLAMACPP_JOBS:-2}" "${missing[@]}" >/dev/null
fi
for t in "${TARGETS[@]}"; do
  if [ -x "src/build/bin/$t" ]; then echo "$DIR/src/build/bin/$t"; else echo "$DIR/src/build/bin/lib$t.so"; fi
done
