#!/usr/bin/env bash
# HarmonyOS / musl check (issue 4): the OpenHarmony NDK builds with clang, LLVM's libc++ and musl,
# so the core library must not use glibc-only functions, macros or headers. The NDK is not a
# Debian package, so this compiles every library source (src/**/*.cpp: edgellm_core, the tools
# library and the C ABI of libedgellm.so, src/api; not src/server, the desktop HTTP server on
# Debian's cpp-httplib) with clang against musl's C headers and
# libc++'s headers instead of glibc + libstdc++, and every C example (examples/*.c, C11, public
# include/ only) against musl: a glibc-only call becomes a compile error here. Generic sources are checked with -fsyntax-only
# (an undeclared call is a front-end error); the ISA kernel folders are compiled (-c -O0 to
# /dev/null, so target-feature errors of the SIMD intrinsics are reported too). Nothing is linked:
# no musl libc++ runtime exists here.
#
#   generic sources        x86_64-linux-musl, and aarch64-linux-musl when its headers exist
#   src/kernels/x86/...    x86_64-linux-musl with the per-ISA flags CMakeLists.txt uses
#   src/kernels/arm/...    aarch64-linux-musl with the per-ISA flags, when its headers exist
#
# Installs nothing: scripts/install-deps.sh brings musl-dev, libc++-14-dev and libc++abi-14-dev.
# aarch64 musl headers come from the `musl-dev:arm64` package (multiarch: installed by
# `install-deps.sh --arm64`, which `make test-musl` runs first); point MUSL_AARCH64_INCLUDE at any aarch64 musl include dir to use another copy.
# Without them the aarch64 compiles are skipped and the summary says so.
#
# Usage: scripts/check-musl.sh          (CXX=clang++-14, JOBS=2, MUSL_X86_64_INCLUDE,
#                                        MUSL_AARCH64_INCLUDE, LIBCXX_INCLUDE override defaults)
#        CHECK_MUSL_VERBOSE=1 scripts/check-musl.sh --one x86_64|aarch64 -|avx2|avx512|avx512_vbmi|amx|neon|dotprod|i8mm FILE
#                                       re-checks one file, with the compiler's whole output
# Prints one line per failing compile (file, target, first error), then a summary; exits non-zero
# if any compile failed, 2 if the toolchain pieces are missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Must match CMakeLists.txt (EDGELLM_WARNINGS and the per-ISA COMPILE_OPTIONS).
warnings=(-Wall -Wextra -Wpedantic -Wno-missing-field-initializers -Werror)
c_warnings=(-Wall -Wextra -Wpedantic -Werror)  # EDGELLM_C_WARNINGS (the C examples)
avx2_flags=(-mavx2 -mfma -mf16c -mbmi2)
avx512_flags=(-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma -mf16c -mbmi2)
avx512_vbmi_flags=(-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512vbmi -mavx2 -mfma -mf16c -mbmi2)
amx_flags=(-mamx-tile -mamx-int8 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma -mf16c -mbmi2)
dotprod_flags=(-march=armv8.2-a+dotprod+fp16)
i8mm_flags=(-march=armv8.6-a+dotprod+i8mm+fp16)

cxx=${CXX:-}
if [[ -z $cxx ]]; then
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null; then cxx=$c; break; fi
  done
fi
if [[ -z $cxx || $("$cxx" --version 2>/dev/null) != *clang* ]]; then
  echo "check-musl: needs clang++ (set CXX); run scripts/install-deps.sh" >&2
  exit 2
fi
# The C compiler next to it (clang++-14 -> clang-14) for examples/*.c; CC overrides.
cc=${CC:-${cxx/clang++/clang}}
# The C++ flags of one musl target (TARGET MUSL_INCLUDE ARCH_DEFINE) into cxx_flags: the --one
# compiles and the precompiled header share them, as clang accepts a PCH only under the same flags.
# -nostdinc/-nostdinc++ drop glibc's /usr/include and libstdc++; the search path is exactly
# libc++, clang's own headers (intrinsics, stddef.h), musl. _LIBCPP_HAS_MUSL_LIBC is what a
# musl build of libc++ records in its __config_site (Debian's is configured for glibc).
set_cxx_flags() {
  cxx_flags=(--target="$1-linux-musl" -std=c++20 -O0 -nostdinc -nostdinc++ -isystem "$libcxx"
    -isystem "$resource/include" -isystem "$2" -D_LIBCPP_HAS_MUSL_LIBC -Iinclude -Isrc "$3" "${warnings[@]}")
}
# libc++ headers of the same LLVM as the compiler (/usr/lib/llvm-14/bin/clang++ -> include/c++/v1).
llvm_root=$(dirname "$(dirname "$(readlink -f "$(command -v "$cxx")")")")
libcxx=${LIBCXX_INCLUDE:-$llvm_root/include/c++/v1}
resource=$("$cxx" -print-resource-dir)
musl_x86=${MUSL_X86_64_INCLUDE:-/usr/include/x86_64-linux-musl}
musl_arm=${MUSL_AARCH64_INCLUDE:-/usr/include/aarch64-linux-musl}

# One compile (run by xargs below): prints "ok" or "FAIL <file> [<target>]: <first error>".
# --batch TARGET FILE...: generic C++ sources of one folder in one -fsyntax-only translation unit
# (#included one after another, as a unity build does): the libc++ and project headers are parsed
# once per batch instead of once per file. A batch that fails is checked again file by file
# (--one), so every verdict and message names its own file.
if [[ ${1:-} == --batch ]]; then
  target=$2
  shift 2
  case $target in
    x86_64) musl=$musl_x86 arch=(-DEDGELLM_ARCH_X86=1) ;;
    aarch64) musl=$musl_arm arch=(-DEDGELLM_ARCH_ARM64=1) ;;
  esac
  unit=$(mktemp "${CHECK_MUSL_PCH_DIR:-${TMPDIR:-/tmp}}/batch-XXXXXX.cpp")
  for file in "$@"; do printf '#include "%s/%s"\n' "$root" "$file"; done >"$unit"
  mode=(-fsyntax-only)
  pch=${CHECK_MUSL_PCH_DIR:-}/$target.pch
  [[ -n ${CHECK_MUSL_PCH_DIR:-} && -f $pch ]] && mode+=(-include-pch "$pch")
  set_cxx_flags "$target" "$musl" "${arch[@]}"
  if (cd "$root" && "$cxx" "${cxx_flags[@]}" "${mode[@]}" "$unit" >/dev/null 2>&1); then
    for file in "$@"; do echo "ok $file [$target]"; done
  else
    for file in "$@"; do "${BASH_SOURCE[0]}" --one "$target" - "$file"; done
  fi
  rm -f "$unit"
  exit 0
fi

if [[ ${1:-} == --one ]]; then
  target=$2 isa=$3 file=$4
  [[ $isa == - ]] && isa=""
  case $target in
    x86_64) musl=$musl_x86 arch=(-DEDGELLM_ARCH_X86=1) ;;
    aarch64) musl=$musl_arm arch=(-DEDGELLM_ARCH_ARM64=1) ;;
  esac
  case $isa in
    avx2) isa_flags=("${avx2_flags[@]}") ;;
    avx512) isa_flags=("${avx512_flags[@]}") ;;
    avx512_vbmi) isa_flags=("${avx512_vbmi_flags[@]}") ;;
    amx) isa_flags=("${amx_flags[@]}") ;;
    dotprod) isa_flags=("${dotprod_flags[@]}") ;;
    i8mm) isa_flags=("${i8mm_flags[@]}") ;;
    *) isa_flags=() ;;  # generic files and neon (the armv8-a baseline)
  esac
  if [[ $file == *.c ]]; then
    # A C program of the public API (examples/*.c): strict C11 against musl alone, include/ only.
    compile=("$cc" --target="$target-linux-musl" -std=c11 -O0 -c -o /dev/null -nostdinc
      -isystem "$resource/include" -isystem "$musl" -Iinclude "${c_warnings[@]}" "$file")
  else
    # Generic files: -fsyntax-only (a glibc-only call is a Sema error: undeclared; 40 % less time
    # than code generation). ISA kernel files are compiled to an object: clang reports an
    # intrinsic used without its target feature only during code generation.
    # Generic files also take the precompiled standard headers of their target (see
    # std_pch below: the same flags, so clang accepts it) when the run made one.
    if [[ -z $isa ]]; then
      mode=(-fsyntax-only)
      pch=${CHECK_MUSL_PCH_DIR:-}/$target.pch
      [[ -n ${CHECK_MUSL_PCH_DIR:-} && -f $pch ]] && mode+=(-include-pch "$pch")
    else
      mode=(-c -o /dev/null)
    fi
    set_cxx_flags "$target" "$musl" "${arch[@]}"
    compile=("$cxx" "${cxx_flags[@]}" "${mode[@]}" "${isa_flags[@]}" "$file")
  fi
  if out=$(cd "$root" && "${compile[@]}" 2>&1); then
    echo "ok $file [$target]"
  else
    first=$(grep -m1 -E 'error:' <<<"$out" || true)
    echo "FAIL $file [$target${isa:+ $isa}]: ${first:-$(head -n1 <<<"$out")}"
    # CHECK_MUSL_VERBOSE=1: the whole compiler output too (stderr), e.g. when re-checking one file.
    [[ ${CHECK_MUSL_VERBOSE:-0} == 1 ]] && printf '%s\n' "$out" >&2
  fi
  exit 0
fi

missing=()
[[ -f $libcxx/__config ]] || missing+=("libc++ headers ($libcxx: libc++-14-dev)")
[[ -f $musl_x86/stdio.h ]] || missing+=("musl headers ($musl_x86: musl-dev)")
if ((${#missing[@]})); then
  printf 'check-musl: missing %s\n' "${missing[@]}" >&2
  echo "check-musl: run scripts/install-deps.sh" >&2
  exit 2
fi
have_arm=0
[[ -f $musl_arm/stdio.h && -f $musl_arm/bits/alltypes.h ]] && have_arm=1

# Generic sources are checked for aarch64 (the phones' target) and, when their preprocessed text
# can differ between the two targets, for x86_64 too: the file, or a header it includes
# (transitively, within src/ and include/), tests an architecture macro. A glibc-only call in
# any other file is the same undeclared name on both targets, so one target finds it.
arch_re='EDGELLM_ARCH_|__x86_64__|__aarch64__|__AVX|__ARM_|__SSE|__amd64__|__i386__'
arch_sensitive=$(cd "$root" && {
  mapfile -t arch_h < <(grep -rlE "$arch_re" src include --include='*.h' | LC_ALL=C sort)
  while :; do
    names=$(printf '%s\n' "${arch_h[@]}" | sed -E 's#^(src|include)/##' | paste -sd'|' | sed 's/[.]/[.]/g')
    [[ -z $names ]] && break
    mapfile -t more < <(grep -rlE "#include \"($names)\"" src include --include='*.h' | LC_ALL=C sort)
    mapfile -t merged < <(printf '%s\n' "${arch_h[@]}" "${more[@]}" | LC_ALL=C sort -u)
    ((${#merged[@]} == ${#arch_h[@]})) && break
    arch_h=("${merged[@]}")
  done
  names=$(printf '%s\n' "${arch_h[@]}" | sed -E 's#^(src|include)/##' | paste -sd'|' | sed 's/[.]/[.]/g')
  grep -rlE "$arch_re${names:+|#include \"($names)\"}" src examples --include='*.cpp' --include='*.c'
} | LC_ALL=C sort -u)
both_targets() { ((!have_arm)) || grep -qxF "$1" <<<"$arch_sensitive"; }

# The library's sources, as CMakeLists.txt globs them; the ISA folders get their flags.
jobs_list=()
generic_x86=()
generic_arm=()
n_arm_sources=0
while IFS= read -r f; do
  case $f in
    src/kernels/x86/avx2/*) jobs_list+=("x86_64 avx2 $f") ;;
    src/kernels/x86/avx512/*) jobs_list+=("x86_64 avx512 $f") ;;
    src/kernels/x86/avx512_vbmi/*) jobs_list+=("x86_64 avx512_vbmi $f") ;;
    src/kernels/x86/amx/*) jobs_list+=("x86_64 amx $f") ;;
    src/kernels/x86/*) echo "check-musl: $f is in no ISA folder CMakeLists.txt compiles" >&2; exit 2 ;;
    src/kernels/arm/neon/* | src/kernels/arm/dotprod/* | src/kernels/arm/i8mm/*)
      n_arm_sources=$((n_arm_sources + 1))
      if ((have_arm)); then
        isa=${f#src/kernels/arm/}
        jobs_list+=("aarch64 ${isa%%/*} $f")
      fi
      ;;
    src/kernels/arm/*) echo "check-musl: $f is in no ISA folder CMakeLists.txt compiles" >&2; exit 2 ;;
    src/tools/fetch/*) ;;  # Linux tool builds only (libcurl downloads for the CLI): never on a phone
    *)
      if both_targets "$f"; then generic_x86+=("$f"); fi
      if ((have_arm)); then generic_arm+=("$f"); fi
      ;;
  esac
done < <(cd "$root" && find src -name '*.cpp' -not -path 'src/server/*' | LC_ALL=C sort)
# The generic sources as --batch jobs: up to 8 files of one folder per translation unit (a folder
# is in one library, where no two files may share a file-local name: CMakeLists.txt, EDGELLM_UNITY).
batch_jobs() {  # batch_jobs TARGET FILE... (sorted, so a folder's files are adjacent)
  local target=$1 dir="" batch=() f
  shift
  for f in "$@"; do
    if [[ ${#batch[@]} -ge 8 || ( ${#batch[@]} -gt 0 && $(dirname "$f") != "$dir" ) ]]; then
      jobs_list+=("--batch $target ${batch[*]}")
      batch=()
    fi
    dir=$(dirname "$f")
    batch+=("$f")
  done
  if ((${#batch[@]})); then jobs_list+=("--batch $target ${batch[*]}"); fi
}
batch_jobs x86_64 "${generic_x86[@]}"
batch_jobs aarch64 "${generic_arm[@]}"
# The C examples (public header only, as an app on the device would build them).
while IFS= read -r f; do
  if both_targets "$f"; then jobs_list+=("x86_64 - $f"); fi
  if ((have_arm)); then jobs_list+=("aarch64 - $f"); fi
done < <(cd "$root" && find examples -maxdepth 1 -name '*.c' 2>/dev/null | LC_ALL=C sort)

start=$(date +%s)
# Precompiled libc++ headers per target: parsing them is most of a generic file's front-end time
# (inference_service.cpp: 2.7 s -> 1.8 s, jinja_parser.cpp 1.5 s -> 0.9 s). The header only
# includes standard headers, so it hides no glibc-only call (those stay undeclared); a source
# that forgets one of these includes is not this check's concern (the NDK build would say so).
pch_dir=$(mktemp -d "${TMPDIR:-/tmp}/check-musl-pch-XXXXXX")
trap 'rm -rf "$pch_dir"' EXIT
printf '#include <%s>\n' algorithm atomic chrono cmath condition_variable cstdint cstring deque \
  functional map memory mutex optional sstream string string_view thread unordered_map vector \
  > "$pch_dir/std.h"
std_pch() {
  local cxx_flags
  set_cxx_flags "$@"
  (cd "$root" && "$cxx" "${cxx_flags[@]}" -x c++-header "$pch_dir/std.h" -o "$pch_dir/$1.pch") ||
    echo "check-musl: no precompiled header for $1 (each file parses its headers)" >&2
}
std_pch x86_64 "$musl_x86" -DEDGELLM_ARCH_X86=1 &
if ((have_arm)); then std_pch aarch64 "$musl_arm" -DEDGELLM_ARCH_ARM64=1 & fi
wait
export CHECK_MUSL_PCH_DIR=$pch_dir
results=$(printf '%s\n' "${jobs_list[@]}" | sed -E '/^--batch /!s/^/--one /' |
  xargs -P "${JOBS:-2}" -L1 "${BASH_SOURCE[0]}") || true
secs=$(($(date +%s) - start))

failed=$(grep -c '^FAIL' <<<"$results" || true)
passed=$(grep -c '^ok' <<<"$results" || true)
# A compile that reported nothing (the --one step itself died) is a failure too.
compiles=$(printf '%s\n' "${jobs_list[@]}" | awk '{n += ($1 == "--batch") ? NF - 2 : 1} END {print n}')
lost=$((compiles - passed - failed))
if ((lost > 0)); then
  echo "check-musl: FAIL $lost compiles reported no result" >&2
  failed=$((failed + lost))
fi
# A file counts as compiling only if every target it was compiled for passed.
total_files=$(printf '%s\n' "${jobs_list[@]}" | awk '{for (i = 3; i <= ($1 == "--batch" ? NF : 3); ++i) print $i}' |
  sort -u | wc -l)
failed_files=$(awk '/^FAIL/ {print $2}' <<<"$results" | sort -u | wc -l)
files=$((total_files - failed_files))
grep '^FAIL' <<<"$results" | sed 's/^FAIL /check-musl: FAIL /' || true
echo "check-musl: $files of $total_files files compile against musl + libc++ ($passed compiles: x86_64$( \
  ((have_arm)) && echo ' + aarch64'), $failed failed, ${secs}s, $cxx)"
if ((!have_arm)); then
  echo "check-musl: aarch64 not checked ($n_arm_sources src/kernels/arm files and the ARM64 branches" \
    "of generic files): no aarch64 musl headers at $musl_arm (MUSL_AARCH64_INCLUDE)"
fi
echo "check-musl: $passed passed, $failed failed"
((failed == 0))
