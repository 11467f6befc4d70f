#!/usr/bin/env bash
# Checks what libedgellm.so shows an app (run by `make test`, docs/testing.md):
#   1. every dynamic symbol it defines is part of the C ABI (`edgellm_*`); the only others allowed
#      are the linker's own markers (_init, _fini, _edata, _end, __bss_start). Anything else — a
#      C++ class, a std:: template instantiation, a static-library symbol — is listed and fails.
#   2. it exports at least one edgellm_* function;
#   3. its NEEDED entries are only the C/C++ runtime (libc, libm, libpthread, libdl, librt,
#      libstdc++, libgcc_s, the dynamic loader): no third-party runtime dependency.
#
#   scripts/check-exports.sh [LIBRARY | BUILD_DIR]   (default: build/; NM / READELF override the
#                          tools, e.g. NM=aarch64-linux-gnu-nm READELF=aarch64-linux-gnu-readelf)
# Given a build directory (or nothing) while the tree has no src/api/*.cpp yet (no C ABI, so the
# build makes no libedgellm.so) it says so and passes; a LIBRARY named explicitly must exist.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nm=${NM:-nm}
readelf=${READELF:-readelf}
lib=${1:-$root/build}
if [[ -d $lib ]]; then
  lib=$lib/libedgellm.so
  if [[ ! -e $lib ]] && ! compgen -G "$root/src/api/*.cpp" >/dev/null; then
    echo "check-exports: no src/api/*.cpp, so no libedgellm.so to check: skipped"
    exit 0
  fi
fi
if [[ ! -e $lib ]]; then
  echo "check-exports: $lib not found (build the 'edgellm' target first)" >&2
  exit 1
fi
lib=$(readlink -f "$lib")

failed=0

# 1 + 2: defined dynamic symbols. `nm -D --defined-only` prints "value type name" (name may carry
# @VERSION or @@VERSION); absolute symbols (type A, e.g. a version node) are the linker's.
mapfile -t syms < <("$nm" -D --defined-only "$lib" | awk 'NF >= 3 && $2 != "A" { print $3 }' | sed 's/@.*//' | sort -u)
bad=()
n_api=0
for s in "${syms[@]}"; do
  case $s in
    edgellm_*) n_api=$((n_api + 1)) ;;
    _init | _fini | _edata | _end | __bss_start) ;;
    *) bad+=("$s") ;;
  esac
done
if ((${#bad[@]})); then
  echo "check-exports: FAIL $lib exports ${#bad[@]} symbol(s) outside the C ABI (edgellm_*):" >&2
  for s in "${bad[@]}"; do
    printf '  %s' "$s" >&2
    d=$(c++filt <<<"$s" 2>/dev/null || true)
    [[ -n $d && $d != "$s" ]] && printf '   (%s)' "$d" >&2
    printf '\n' >&2
  done
  failed=1
fi
if ((n_api == 0)); then
  echo "check-exports: FAIL $lib exports no edgellm_* function (EDGELLM_API missing?)" >&2
  failed=1
fi

# 3: NEEDED entries.
mapfile -t needed < <("$readelf" -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
bad_needed=()
for n in "${needed[@]}"; do
  case $n in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libstdc++.so.* | libgcc_s.so.* | \
      ld-linux*.so.* | libc.musl-*.so.* | ld-musl-*.so.*) ;;
    *) bad_needed+=("$n") ;;
  esac
done
if ((${#bad_needed[@]})); then
  echo "check-exports: FAIL $lib needs libraries beyond the C/C++ runtime: ${bad_needed[*]}" >&2
  failed=1
fi

soname=$("$readelf" -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if ((failed)); then
  exit 1
fi
echo "check-exports: ok $lib (soname ${soname:-none}): $n_api edgellm_* symbols, nothing else; needs ${needed[*]:-nothing}"
