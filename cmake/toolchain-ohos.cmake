# Cross-compiling EdgeLLM for HarmonyOS (OpenHarmony) on 64-bit ARM with the OHOS NDK's clang
# and musl sysroot. NOT exercised by CI (the NDK is not a Debian package); kept minimal so it
# tracks the NDK layout:
#
#   export OHOS_NDK_HOME=/path/to/ohos-sdk/linux/native     # contains llvm/ and sysroot/
#   cmake -S . -B build-ohos -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-ohos.cmake \
#         -DEDGELLM_BUILD_TESTS=OFF
#
# The library uses only POSIX + Linux interfaces that musl provides (sched_setaffinity,
# getauxval, mmap/madvise, /proc); no glibc-only calls (see docs/arm64.md). Kernel dispatch is
# the same as on Linux: NEON always, dotprod / i8mm from AT_HWCAP / AT_HWCAP2.
set(CMAKE_SYSTEM_NAME Linux)  # OHOS is a Linux kernel + musl userland; CMake has no OHOS system
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT DEFINED ENV{OHOS_NDK_HOME} AND NOT OHOS_NDK_HOME)
  message(FATAL_ERROR "toolchain-ohos.cmake: set OHOS_NDK_HOME to the NDK's native/ folder")
endif()
if(NOT OHOS_NDK_HOME)
  set(OHOS_NDK_HOME $ENV{OHOS_NDK_HOME})
endif()
set(OHOS_NDK_HOME ${OHOS_NDK_HOME} CACHE PATH "OpenHarmony NDK native/ folder")
# CMake re-runs toolchain files for try_compile projects: pass the NDK path along.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES OHOS_NDK_HOME)

set(OHOS_TARGET aarch64-linux-ohos)
set(CMAKE_C_COMPILER ${OHOS_NDK_HOME}/llvm/bin/clang)
set(CMAKE_CXX_COMPILER ${OHOS_NDK_HOME}/llvm/bin/clang++)
set(CMAKE_C_COMPILER_TARGET ${OHOS_TARGET})
set(CMAKE_CXX_COMPILER_TARGET ${OHOS_TARGET})
set(CMAKE_SYSROOT ${OHOS_NDK_HOME}/sysroot)
set(CMAKE_AR ${OHOS_NDK_HOME}/llvm/bin/llvm-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${OHOS_NDK_HOME}/llvm/bin/llvm-ranlib CACHE FILEPATH "")

# The NDK ships libc++ (not libstdc++) and compiler-rt; link them statically so a binary needs
# only the device's musl libc.so.
set(CMAKE_CXX_FLAGS_INIT "-stdlib=libc++")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld -rtlib=compiler-rt -static-libstdc++")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld -rtlib=compiler-rt -static-libstdc++")

set(CMAKE_FIND_ROOT_PATH ${CMAKE_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
