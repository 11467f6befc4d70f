#!/usr/bin/env bash
# The install test (ctest `install_test_packages`, part of `make test`): installs the normal
# build BUILD into a temporary prefix with `cmake --install` (no second build of the library)
# and checks what an app developer uses:
#   - libedgellm.so.X.Y.Z with SONAME libedgellm.so.X.Y while the version is 0.x (every minor
#     version may break the C ABI; libedgellm.so.X from 1.0), the headers, EdgeLLMConfig.cmake
#     (+ version file, targets), edgellm.pc, the edgellm CLI, share/edgellm/bench-chart.py;
#   - the C examples built against the prefix with CMake (find_package(EdgeLLM) ->
#     EdgeLLM::edgellm) and with pkg-config, and one of each run on stories260K.
# Usage: scripts/test-install.sh BUILD   ($EDGELLM_TESTDATA: the shared/ folder)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: test-install.sh BUILD}" && pwd)
testdata=${EDGELLM_TESTDATA:-$root/../shared}
model="$testdata/models/stories260K.gguf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
libdir=$(dirname "$(find "$prefix" -name 'libedgellm.so.*.*.*' | head -n1)")
[[ -d "$libdir" ]] || fail "no libedgellm.so.X.Y.Z installed"
version=$(sed -n 's/^project(edgellm VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
major=${version%%.*}
minor=$(echo "$version" | cut -d. -f2)
# 0.x: every minor version may break the ABI, so the soname carries major.minor.
want_soname="libedgellm.so.$major"; [[ $major == 0 ]] && want_soname="libedgellm.so.$major.$minor"
soname=$(readelf -d "$libdir/libedgellm.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ "$soname" == "$want_soname" ]] || fail "SONAME '$soname', expected '$want_soname'"
[[ -L "$libdir/$want_soname" && -L "$libdir/libedgellm.so" ]] || fail "soname / dev symlinks missing in $libdir"
for f in include/edgellm/edgellm.h include/edgellm/edgellm.hpp bin/edgellm share/edgellm/bench-chart.py; do
  [[ -e "$prefix/$f" ]] || fail "$f not installed"
done
[[ -f "$libdir/cmake/EdgeLLM/EdgeLLMConfig.cmake" && -f "$libdir/cmake/EdgeLLM/EdgeLLMConfigVersion.cmake" ]] ||
  fail "EdgeLLMConfig.cmake not installed"
[[ -f "$libdir/pkgconfig/edgellm.pc" ]] || fail "edgellm.pc not installed"
# Outputs are captured before grep reads them: `cmd | grep -q` under pipefail fails when grep
# exits at its first match and cmd, still writing, dies of SIGPIPE (a fresh-clone CI run, stop 45).
grep -q "^edgellm $version" <<<"$("$prefix/bin/edgellm" --version)" || fail "installed CLI: wrong --version"
# Nothing of the build tree may leak into the installed package.
if grep -rl --include='*.cmake' --include='*.pc' "$build\|$root/src" "$prefix" >/dev/null; then
  fail "the installed config files name the build or source tree"
fi

# CMake: find_package(EdgeLLM) from the prefix, every example.
cmake -S "$root/tests/install/consumer" -B "$tmp/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLES_DIR="$root/examples" >"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "find_package(EdgeLLM)"; }
cmake --build "$tmp/cmake-build" >>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "building the examples with CMake"; }
# The executable finds the library by the RPATH CMake gives it; make sure it is the installed one.
grep -q "$libdir/$want_soname" <<<"$(ldd "$tmp/cmake-build/stream_prompt")" || fail "CMake build does not use $libdir"
"$tmp/cmake-build/stream_prompt" "$model" "Lily went to the park" >"$tmp/cmake.out" 2>"$tmp/cmake.err" ||
  { cat "$tmp/cmake.err"; fail "stream_prompt (CMake build) failed"; }
[[ -s "$tmp/cmake.out" ]] || fail "stream_prompt (CMake build) printed no text"

# pkg-config: the same examples with a plain compiler line.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pkg-config --exact-version="$version" edgellm || fail "pkg-config: edgellm $version not found"
for src in "$root"/examples/*.c; do
  name=$(basename "$src" .c)
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$src" -o "$tmp/pc-$name" $(pkg-config --cflags --libs edgellm) ||
    fail "building $name with pkg-config"
done
LD_LIBRARY_PATH="$libdir" "$tmp/pc-stream_prompt" "$model" "Lily went to the park" >"$tmp/pc.out" 2>"$tmp/pc.err" ||
  { cat "$tmp/pc.err"; fail "stream_prompt (pkg-config build) failed"; }
cmp -s "$tmp/cmake.out" "$tmp/pc.out" || echo "test-install: note: the two builds' sampled outputs differ (random seed)"
echo "test-install: ok: $soname, find_package(EdgeLLM) and pkg-config builds of $(ls "$root"/examples/*.c | wc -l) examples"
