# Two entry points for a fresh Debian machine (both install their own packages):
#   make demo   build the CLI and generate text with a small model
#   make test   build everything and run every test (what .ci/run calls)
# docs/testing.md: what each configuration of `make test` builds and runs, how long it takes, and
# how to reproduce one failing test in each.
BUILD      ?= build
JOBS       ?= $(shell nproc)
TESTDATA   ?= $(abspath ../shared)
export EDGELLM_TESTDATA ?= $(TESTDATA)

# The plain build unity-builds the libraries, the CLI, the server and the C ABI as the sanitizer,
# fuzz and cross builds do (EDGELLM_UNITY, CMakeLists.txt: batches of 8 sources, the headers
# parsed once per batch), with each function in its own section and the unreached ones dropped at
# link time (EDGELLM_GC_SECTIONS, on by default outside the sanitizers): without that, a test
# binary that links one function of a unity batch carries all 8 sources' code, which moved the
# peak-RSS tests' process overhead past their margin (memory_plan's binary 3.3 -> 5.3 MB of code;
# with it, 2.55 MB, and stories260K's peak 5.0-5.2 -> 4.5 MiB against a plan of 4.66 MiB).
# The gtest-heavy test files (not the kernel, naive-reference or peak-RSS ones) compile with clang++ when it is there (EDGELLM_TEST_CXX,
# CMakeLists.txt: about half of g++'s compile time for gtest-heavy files); the library, tools and
# server keep g++, which links every binary.
TEST_CXX   ?= $(shell command -v clang++ 2>/dev/null)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGELLM_UNITY=ON \
             -DEDGELLM_TEST_CXX=$(TEST_CXX)
# Sanitizer builds: -O1 with line tables (reports name file:line), asserts kept (no -DNDEBUG),
# linked by lld (EDGELLM_LINKER: their ~150 test links take a quarter of GNU ld's time) against
# shared internal libraries (EDGELLM_SHARED_INTERNALS: each test links its own objects instead of
# an 83 MB copy of the library; the plain build, which the RSS tests and the install test use,
# keeps the static libraries an app's libedgellm.so is made of).
SAN_FLAGS  = -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" -DCMAKE_C_FLAGS_RELEASE="-O1 -g1" \
             -DEDGELLM_UNITY=ON -DEDGELLM_LINKER=lld -DEDGELLM_SHARED_INTERNALS=ON -DEDGELLM_TEST_CXX=$(TEST_CXX)
# TSan: the thread pool (platform), the parallel forward pass and repacking (engine), the service,
# the model host and degradation ladder (runtime), the C ABI (api: tests/api and the examples) and
# the HTTP server's I/O thread, workers and service callbacks (server: built without the CLI).
# Only these areas' tests are built.
TSAN_AREAS ?= platform;engine;service;runtime;api;server;grammar

.PHONY: all deps deps-build build demo test test-unit test-exports test-asan test-tsan test-musl fuzz test-arm64 test-server test-napi test-napi-asan clean

all: build

deps:
	scripts/install-deps.sh

# What the plain build and its tests need, no more (the sanitizer, musl, ARM64 and server-test
# packages install with `deps` and the steps that use them).
deps-build:
	scripts/install-deps.sh --build-only

build: deps-build
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The demo builds only the CLI (a minute or two, not the whole test suite) and runs
# scripts/demo.sh: a streamed story from the model kept in the repository (or $EDGELLM_MODEL)
# with its TTFT, tok/s and peak memory. No network needed once the Debian packages are there.
demo: deps-build
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target edgellm_cli
	@scripts/demo.sh $(BUILD)

# The plain -O3 build (the library an app ships) runs the tests that need it (EDGELLM_TEST_SET
# optimized: kernels, end-to-end, peak-RSS bounds, the CLI table, the install and offline-demo
# tests, the examples; every other test runs whole in test-asan, under ASan + UBSan; docs/testing.md,
# "Where each test runs") on the best ISA, then the kernel and end-to-end tests (label e2e) again with
# lower ISAs pinned so each SIMD path is compared with the scalar reference on this one machine
# (and at avx512 on an AMX host, where the default runs the AMX kernels), then the ISA coverage check on x86 (every ISA the host supports must have been used:
# EDGELLM_ISA_LOG, tests/kernels/isa_coverage.cpp; ARM levels: test-arm64) and the exports.
# Skipped test cases are collected after each ctest run and listed at the end, the ones this host
# cannot check first ("NOT CHECKED ON THIS HOST", scripts/report-skips.sh); the ISA coverage check
# prints a WARNING block for the ISAs the CPU lacks (EDGELLM_REQUIRE_ISAS=amx makes it fail).
test-unit: deps-build
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DEDGELLM_TEST_SET=optimized
	cmake --build $(BUILD) -j $(JOBS)
	rm -f $(BUILD)/isa-coverage.log $(BUILD)/skipped.log
	cd $(BUILD) && EDGELLM_ISA_LOG=$(abspath $(BUILD))/isa-coverage.log ctest --output-on-failure -j $(JOBS)
	scripts/report-skips.sh collect $(BUILD) default
	@if [ "$$(uname -m)" = x86_64 ]; then \
	  isas="avx2 scalar"; \
	  if grep -qw amx_int8 /proc/cpuinfo; then isas="avx512 $$isas"; fi; \
	  for isa in $$isas; do \
	    echo "== kernel and e2e tests with EDGELLM_ISA=$$isa"; \
	    (cd $(BUILD) && EDGELLM_ISA=$$isa EDGELLM_ISA_LOG=$(abspath $(BUILD))/isa-coverage.log \
	      ctest --output-on-failure -L 'kernels|e2e' -j $(JOBS)) || exit 1; \
	    scripts/report-skips.sh collect $(BUILD) "EDGELLM_ISA=$$isa" || exit 1; \
	  done; \
	  $(BUILD)/edgellm_isa_coverage $(BUILD)/isa-coverage.log || exit 1; \
	fi
	scripts/report-skips.sh print $(BUILD)
	$(MAKE) test-exports

# libedgellm.so exports only edgellm_* and needs only the C/C++ runtime (nm -D, readelf -d).
test-exports:
	scripts/check-exports.sh $(BUILD)

# ASan + UBSan (-fno-sanitize-recover=all): the whole GoogleTest suite and the C examples, except
# the RSS-bound tests (label "rss") and the plain-only CLI table (label "plain"), then the kernel
# tests at the lower x86 ISAs. The CLI is built too: tests/tools and tests/quant run it.
test-asan: deps
	cmake -S . -B $(BUILD)-asan $(SAN_FLAGS) -DEDGELLM_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS) -LE 'rss|plain'
	@if [ "$$(uname -m)" = x86_64 ]; then \
	  for isa in avx2 scalar; do \
	    echo "== ASan kernel tests with EDGELLM_ISA=$$isa"; \
	    (cd $(BUILD)-asan && EDGELLM_ISA=$$isa ctest --output-on-failure -L kernels -j $(JOBS)) || exit 1; \
	  done; \
	fi

# ThreadSanitizer: the areas of TSAN_AREAS (without the "rss" tests); no CLI.
test-tsan: deps
	cmake -S . -B $(BUILD)-tsan $(SAN_FLAGS) -DEDGELLM_TSAN=ON -DEDGELLM_BUILD_TOOLS=OFF -DEDGELLM_BUILD_NAPI=OFF \
	  "-DEDGELLM_TEST_AREAS=$(TSAN_AREAS)"
	cmake --build $(BUILD)-tsan -j $(JOBS)
	cd $(BUILD)-tsan && ctest --output-on-failure -j $(JOBS) -LE 'rss|plain'

# HarmonyOS / musl: every library source compiled (not linked) by clang against musl's C headers
# and libc++ for x86_64 and aarch64, so a glibc-only call fails (scripts/check-musl.sh,
# docs/arm64.md). --arm64 brings the aarch64 musl headers.
test-musl:
	scripts/install-deps.sh --arm64
	JOBS=$(JOBS) scripts/check-musl.sh

# Short coverage-guided run of every fuzzer over the checked-in corpus (clang + libFuzzer).
fuzz: deps
	cmake -S . -B $(BUILD)-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_CXX_COMPILER=clang++ -DEDGELLM_FUZZ=ON -DEDGELLM_BUILD_TESTS=OFF -DEDGELLM_BUILD_TOOLS=OFF \
	  -DEDGELLM_BUILD_SHARED=OFF -DEDGELLM_UNITY=ON -DEDGELLM_LINKER=lld
	cmake --build $(BUILD)-fuzz -j $(JOBS)
	scripts/run-fuzzers.sh $(BUILD)-fuzz

# NAPI addon (bindings/napi, docs/harmonyos.md): the node --test suite against edgellm.node of
# $(BUILD) (the CLI of the same build is its reference), the npm package (scripts/test-npm-pack.sh:
# `npm pack` of that build, installed offline into an empty project, a stream through
# require('edgellm')), then the HarmonyOS checks: the addon's
# imports and an OHOS-only-header compile (scripts/check-napi-ohos.sh, aarch64 musl headers from
# install-deps.sh --arm64) and the HAR's ArkTS (bindings/ohos/tools/check-arkts.js). npm installs
# the pinned npm packages: node-api-headers (npm ci, package-lock.json), ohos-typescript and
# @ohos-rs/oxk (exact versions; no lock file: oxk lists platform packages the registry lacks,
# which `npm ci` refuses).
# `npm test` runs two test files at a time (package.json, --test-concurrency=2; node's default
# on 2 cores is one): the files wait on reference CLIs, timers and model loads for most of their
# time (18 s of CPU in 63 s of wall time, plain addon): 63 -> 41 s beside the same load.
NAPI_ENV = EDGELLM_CLI=$(abspath $(1))/edgellm EDGELLM_NAPI_ADDON=$(abspath $(1))/bindings/napi/edgellm.node
test-napi: build
	scripts/install-deps.sh --arm64
	cd bindings/napi && npm ci --prefer-offline --no-audit --no-fund
	cmake -S . -B $(BUILD)
	cmake --build $(BUILD) -j $(JOBS) --target edgellm_napi edgellm_cli
	cd bindings/napi && $(call NAPI_ENV,$(BUILD)) npm test
	scripts/test-npm-pack.sh $(BUILD)
	scripts/check-napi-ohos.sh $(BUILD)
	cd bindings/ohos/tools && npm install --prefer-offline --no-package-lock --no-audit --no-fund && node check-arkts.js

# The same node suite with the addon and libedgellm.so built with ASan + UBSan (the $(BUILD)-asan
# configuration of test-asan) and libasan preloaded into node; leak checking off (V8 and node keep
# allocations until exit; the suite's own memory test counts threads instead of RSS).
test-napi-asan: deps
	cd bindings/napi && npm ci --prefer-offline --no-audit --no-fund
	cmake -S . -B $(BUILD)-asan $(SAN_FLAGS) -DEDGELLM_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS) --target edgellm_napi edgellm_cli
	cd bindings/napi && $(call NAPI_ENV,$(BUILD)-asan) EDGELLM_NAPI_SANITIZER=1 \
	  LD_PRELOAD=$$($(CXX) -print-file-name=libasan.so) \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:strict_string_checks=1:check_initialization_order=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 npm test

# ARM64: cross-build with aarch64-linux-gnu-g++ and run the kernel, GGUF-reader and end-to-end
# tests under qemu-aarch64, once per ISA level (scripts/test-arm64.sh, docs/arm64.md).
test-arm64:
	scripts/test-arm64.sh $(BUILD)-arm64

# `edgellm serve` against real clients: the official openai npm client and the web chat page in
# headless Chromium via playwright-core (tests/server/node; docs/server.md). The C++ HTTP tests
# (tests/server) are part of ctest.
test-server: build
	scripts/install-deps.sh --server-tests
	cd tests/server/node && npm ci --prefer-offline --no-audit --no-fund
	cd tests/server/node && EDGELLM_BIN=$(abspath $(BUILD))/edgellm node --test --test-concurrency=1

# Native configurations first (plain, then the sanitizers), the ARM64 step last (after
# everything native has passed); scripts/run-steps.sh stops at the first failing step and prints
# each step's wall time. Once the plain build's packages are there, the later steps' Debian and
# npm packages download and install in the background while it builds (scripts/prefetch-deps.sh,
# log in $(BUILD)/prefetch-deps.log); each step's own install then finds them present.
TEST_STEPS = test-unit test-asan test-tsan test-musl fuzz test-napi test-napi-asan test-server test-arm64
test: deps-build
	@mkdir -p $(BUILD); scripts/prefetch-deps.sh >$(BUILD)/prefetch-deps.log 2>&1 & prefetch=$$!; \
	MAKE="$(MAKE)" scripts/run-steps.sh $(TEST_STEPS); status=$$?; \
	wait $$prefetch; echo "prefetch: $$(tail -n 1 $(BUILD)/prefetch-deps.log)"; exit $$status

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz $(BUILD)-arm64
