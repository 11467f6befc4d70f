#pragma once
// Whether this test binary is built with a sanitizer (ASan or TSan; GCC and clang >= 14 define
// these macros). A test whose numeric breadth (many samples, shapes, repetitions) is carried by
// the plain -O3 build runs a smaller subset under a sanitizer that still takes every code path
// once: there the point is memory, UB and race detection, at 2-20x the plain run time. Each such
// subset is documented beside its test and in docs/testing.md ("Where each test runs").
namespace edgellm::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
// ThreadSanitizer only: cases whose variants differ in what TSan does not look at (shapes,
// weight types: the same threads, the same partitions) run one variant there.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitized = true;
#else
inline constexpr bool kThreadSanitized = false;
#endif

}  // namespace edgellm::test
