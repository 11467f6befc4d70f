#!/usr/bin/env bash
# Compiler launcher of the test files in the sanitizer builds (EDGELLM_TEST_CXX, CMakeLists.txt):
#   test-cxx.sh TEST_CXX [TEST_CXX_FLAGS...] -- BUILD_CXX ARGS...  ->  TEST_CXX TEST_CXX_FLAGS... ARGS...
# CMake calls it with the build's own compiler (g++, or aarch64-linux-gnu-g++ with
# TEST_CXX_FLAGS --target=aarch64-linux-gnu) and that compiler's arguments; the test file is
# compiled by TEST_CXX (clang++) instead. Why: the test files are gtest expansions and
# standard templates, which clang compiles in half of g++'s time at -O0 (with the test PCH's
# template instantiations made once, -fpch-instantiate-templates): test_structured_http.cpp under
# ASan 6.2 s of CPU with g++, 2.9 s with clang++ (AMD EPYC). The library, tools and server under
# test stay g++'s; the test objects link with g++ against its sanitizer runtime, which serves
# clang's instrumentation (the same compiler-rt interface: tests/platform/test_sanitizer_reach.cpp).
set -euo pipefail
test_cxx=()
while (($#)) && [[ $1 != -- ]]; do
  test_cxx+=("$1")
  shift
done
shift 2  # "--" and the build's compiler
args=()
header=0
output=
previous=
for arg in "$@"; do
  case $arg in
    -Wno-restrict | -Wno-maybe-uninitialized) ;;  # g++-only warnings
    c++-header) header=1; args+=("$arg") ;;
    *) args+=("$arg") ;;
  esac
  [[ $previous == -o ]] && output=$arg
  previous=$arg
done
if ((header)); then
  # CMake makes the PCH with `-include cmake_pch.hxx -o cmake_pch.hxx.gch`: clang would take an
  # existing .gch (the previous build's) as the base of the new one and then overwrite it, which
  # leaves a PCH that refers to itself ("out of date" in every test file). Start from nothing.
  [[ -n $output ]] && rm -f -- "$output"
  args+=(-fpch-instantiate-templates)
fi
exec "${test_cxx[@]}" -Wno-unknown-warning-option "${args[@]}"
