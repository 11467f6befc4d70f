# Cross-compiling EdgeLLM for 64-bit ARM Linux (glibc) from an x86-64 Debian host with the
# distribution cross compiler (package g++-aarch64-linux-gnu; scripts/install-deps.sh --arm64).
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
#         -DEDGELLM_GTEST_FROM_SOURCE=ON
#
# Binaries run on the host through qemu user-mode emulation (package qemu-user-static); the
# emulator is recorded as CMAKE_CROSSCOMPILING_EMULATOR so `ctest` in the build tree works too.
# scripts/test-arm64.sh drives the whole build-and-test step.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(EDGELLM_AARCH64_TRIPLE aarch64-linux-gnu CACHE STRING "GNU triple of the cross compiler")
set(CMAKE_C_COMPILER ${EDGELLM_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${EDGELLM_AARCH64_TRIPLE}-g++)

# The target's libraries and headers live under /usr/<triple> (Debian multiarch cross layout).
set(EDGELLM_AARCH64_SYSROOT /usr/${EDGELLM_AARCH64_TRIPLE} CACHE PATH "Target library root (for qemu -L)")
set(CMAKE_FIND_ROOT_PATH ${EDGELLM_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # build tools (ninja, python) are host programs
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)    # never pick up the host's x86-64 GTest

# `-cpu max` gives every extension qemu implements (NEON, dotprod, i8mm, fp16), so the default
# run exercises the best kernels; EDGELLM_ISA pins lower ones.
find_program(EDGELLM_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(EDGELLM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGELLM_QEMU_AARCH64} -cpu max -L ${EDGELLM_AARCH64_SYSROOT})
endif()
