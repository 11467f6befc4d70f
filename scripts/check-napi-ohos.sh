#!/usr/bin/env bash
# HarmonyOS check of the NAPI addon (bindings/napi, issue 18). HarmonyOS re-implements Node-API in
# libace_napi.z.so and exports only part of it; an addon that imports anything else fails to load
# on the device. The OHOS NDK is not a Debian package, so three checks stand in for it here:
#
#   imports   every napi_* / node_api_* symbol edgellm.node (the Node.js build of the same source)
#             imports is in ../shared/testdata/ohos/napi-exports.txt at API level <= 12
#             (HarmonyOS NEXT's first level);
#   compile   the OHOS branch of bindings/napi/src/compat.h and every addon source compile with
#             clang against a napi/native_api.h that declares only those functions (the Node.js
#             headers with every other function declaration removed), so a call OHOS lacks is a
#             compile error; with musl + libc++ for aarch64 (and x86_64), as scripts/check-musl.sh;
#   typings   the HAR's Index.d.ts is the same file as bindings/napi/index.d.ts.
#
# Usage: scripts/check-napi-ohos.sh BUILD_DIR      (BUILD_DIR/bindings/napi/edgellm.node)
#   NODE_API_INCLUDE  the Node-API headers (default: bindings/napi/node_modules/node-api-headers/
#                     include, else /usr/include/node); OHOS_API_LEVEL (default 12);
#   CXX, MUSL_X86_64_INCLUDE, MUSL_AARCH64_INCLUDE, LIBCXX_INCLUDE as scripts/check-musl.sh.
# Exits non-zero on any failure, 2 when a tool or input is missing. Prints one line per problem.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: scripts/check-napi-ohos.sh BUILD_DIR}
level=${OHOS_API_LEVEL:-12}
testdata=${EDGELLM_TESTDATA:-$root/../shared}
exports_list=$testdata/testdata/ohos/napi-exports.txt
addon=$build/bindings/napi/edgellm.node
failed=0

for f in "$exports_list" "$addon"; do
  [[ -f $f ]] || { echo "check-napi-ohos: missing $f" >&2; exit 2; }
done

# Functions available at the level: "<symbol> <level> <kind>" lines; levels like 26.0.1 compare
# by their major number.
allowed=$(awk -v max="$level" '!/^#/ && NF >= 2 { split($2, v, "."); if (v[1] + 0 <= max) print $1 }' \
  "$exports_list" | LC_ALL=C sort -u)

# ---- imports
imports=$(nm -D --undefined-only "$addon" | awk '{print $NF}' | sed 's/@.*//' | grep -E '^(napi_|node_api_)' |
  LC_ALL=C sort -u)
n_imports=$(wc -l <<<"$imports")
missing=$(LC_ALL=C comm -23 <(echo "$imports") <(echo "$allowed"))
if [[ -n $missing ]]; then
  while read -r s; do
    lvl=$(awk -v s="$s" '$1 == s {print $2}' "$exports_list")
    echo "check-napi-ohos: FAIL edgellm.node imports $s: ${lvl:+API $lvl, }not exported by OHOS at API <= $level"
  done <<<"$missing"
  failed=1
fi
echo "check-napi-ohos: imports: $n_imports napi_* symbols, $(grep -c . <<<"$missing" || true) not in the OHOS API $level list"

# ---- compile against an OHOS-only header
napi_include=${NODE_API_INCLUDE:-}
if [[ -z $napi_include ]]; then
  for d in "$root/bindings/napi/node_modules/node-api-headers/include" /usr/include/node; do
    [[ -f $d/js_native_api.h ]] && { napi_include=$d; break; }
  done
fi
[[ -n $napi_include && -f $napi_include/node_api.h ]] || { echo "check-napi-ohos: no Node-API headers" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/napi"
cp "$napi_include"/js_native_api_types.h "$napi_include"/node_api_types.h "$tmp/napi/"
# Each "NAPI_EXTERN <type> NAPI_CDECL <name>(...);" declaration stays only if <name> is allowed.
echo "$allowed" >"$tmp/allowed.txt"
for h in js_native_api.h node_api.h; do
  perl -0777 -e '
    open(my $f, "<", $ARGV[0]) or die; my %ok = map { ($_, 1) } split /\n/, <$f>; close $f;
    open(my $in, "<", $ARGV[1]) or die; my $src = <$in>; my ($kept, $dropped) = (0, 0);
    $src =~ s{(NAPI_EXTERN\s[^;{}#]*?\b((?:napi|node_api)_\w+)\s*\([^;{}#]*?\)\s*;)}{
      if ($ok{$2}) { $kept++; $1 } else { $dropped++; "/* $2: not exported by OHOS */" } }ge;
    print $src; print STDERR "$ARGV[1]: $kept declarations kept, $dropped removed\n";
  ' "$tmp/allowed.txt" "$napi_include/$h" >"$tmp/napi/$h" 2>>"$tmp/filter.log"
done
# OHOS's entry header: <napi/native_api.h> brings the Node-API declarations and napi_module.
cat >"$tmp/napi/native_api.h" <<'HDR'
#ifndef OHOS_ONLY_NATIVE_API_H
#define OHOS_ONLY_NATIVE_API_H
#include "node_api.h"
#endif
HDR
# <hilog/log.h>: the declarations of the NDK header the addon uses (OH_LOG_Print, documented in
# openharmony/docs native-lib hilog), so the OHOS branch of module.cpp compiles too.
mkdir -p "$tmp/hilog"
cat >"$tmp/hilog/log.h" <<'HDR'
#ifndef OHOS_ONLY_HILOG_LOG_H
#define OHOS_ONLY_HILOG_LOG_H
#ifdef __cplusplus
extern "C" {
#endif
typedef enum { LOG_APP = 0 } LogType;
typedef enum { LOG_DEBUG = 3, LOG_INFO = 4, LOG_WARN = 5, LOG_ERROR = 6, LOG_FATAL = 7 } LogLevel;
int OH_LOG_Print(LogType type, LogLevel level, unsigned int domain, const char* tag, const char* fmt, ...);
#ifdef __cplusplus
}
#endif
#endif
HDR
sed 's/^/check-napi-ohos: header: /; s|'"$napi_include"'/||' "$tmp/filter.log"

cxx=${CXX:-}
if [[ -z $cxx ]]; then
  for c in clang++-14 clang++; do command -v "$c" >/dev/null && { cxx=$c; break; }; done
fi
[[ -n $cxx ]] || { echo "check-napi-ohos: needs clang++ (scripts/install-deps.sh)" >&2; exit 2; }
llvm_root=$(dirname "$(dirname "$(readlink -f "$(command -v "$cxx")")")")
libcxx=${LIBCXX_INCLUDE:-$llvm_root/include/c++/v1}
resource=$("$cxx" -print-resource-dir)
warnings=(-Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Werror)  # EDGELLM_WARNINGS
targets=()
for t in aarch64 x86_64; do
  var=MUSL_$(tr a-z A-Z <<<"$t")_INCLUDE
  musl=${!var:-/usr/include/$t-linux-musl}
  if [[ -f $musl/stdio.h && -f $musl/bits/alltypes.h ]]; then
    targets+=("$t:$musl")
  else
    echo "check-napi-ohos: FAIL no $t musl headers at $musl (scripts/install-deps.sh --arm64)"
    failed=1
  fi
done
n_ok=0
for tm in "${targets[@]}"; do
  t=${tm%%:*} musl=${tm#*:}
  for src in "$root"/bindings/napi/src/*.cpp; do
    if out=$("$cxx" --target="$t-linux-musl" -std=c++20 -O0 -fsyntax-only -nostdinc -nostdinc++ \
        -isystem "$libcxx" -isystem "$resource/include" -isystem "$musl" -D_LIBCPP_HAS_MUSL_LIBC \
        -DEDGELLM_NAPI_OHOS -DNAPI_VERSION=8 -isystem "$tmp" -I"$root/include" "${warnings[@]}" "$src" 2>&1); then
      n_ok=$((n_ok + 1))
    else
      echo "check-napi-ohos: FAIL ${src#"$root"/} [$t]: $(grep -m1 'error:' <<<"$out" || head -n1 <<<"$out")"
      failed=1
    fi
  done
done
echo "check-napi-ohos: compile: $n_ok sources x targets compile for OHOS (${targets[*]%%:*}) against the API $level header"

# ---- typings
ohos_types=$root/bindings/ohos/src/main/cpp/types/libedgellm_napi/Index.d.ts
if ! cmp -s "$root/bindings/napi/index.d.ts" "$ohos_types"; then
  echo "check-napi-ohos: FAIL ${ohos_types#"$root"/} differs from bindings/napi/index.d.ts"
  failed=1
fi

((failed == 0)) && echo "check-napi-ohos: OK"
exit "$failed"
