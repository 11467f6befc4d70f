#pragma once
// Whether this test binary is built with a sanitizer (ASan or TSan). GCC defines
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang 14 (which compiles the test files of the
// sanitizer builds: EDGELLM_TEST_CXX, CMakeLists.txt) answers __has_feature instead. A test whose
// numeric breadth (many samples, shapes, repetitions) is carried by the plain -O3 build runs a
// smaller subset under a sanitizer that still takes every code path once: there the point is
// memory, UB and race detection, at 2-20x the plain run time. Each such subset is documented
// beside its test and in docs/testing.md ("Where each test runs").
#if defined(__has_feature)
#define EDGELLM_TEST_HAS_FEATURE(x) __has_feature(x)
#else
#define EDGELLM_TEST_HAS_FEATURE(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || EDGELLM_TEST_HAS_FEATURE(thread_sanitizer)
#define EDGELLM_TEST_TSAN 1
#else
#define EDGELLM_TEST_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__) || EDGELLM_TEST_HAS_FEATURE(address_sanitizer)
#define EDGELLM_TEST_ASAN 1
#else
#define EDGELLM_TEST_ASAN 0
#endif

namespace edgellm::test {

inline constexpr bool kSanitized = EDGELLM_TEST_ASAN || EDGELLM_TEST_TSAN;
// ThreadSanitizer only: cases whose variants differ in what TSan does not look at (shapes,
// weight types: the same threads, the same partitions) run one variant there.
inline constexpr bool kThreadSanitized = EDGELLM_TEST_TSAN;

}  // namespace edgellm::test
