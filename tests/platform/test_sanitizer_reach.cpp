// The sanitizer builds may compile the test files with another compiler than the library
// (EDGELLM_TEST_CXX: clang++ beside g++, CMakeLists.txt), linked against the library
// compiler's sanitizer runtime. These cases check that a test file's own memory accesses and
// threads are still instrumented and reported by that runtime: a bad read in a test's buffer
// would otherwise pass silently. Whether the binary is a sanitizer build is asked of the runtime
// it carries (its entry point, found by dlsym), not of this file's compiler: a test file compiled
// without instrumentation into an ASan binary fails here instead of skipping. Plain builds skip.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace edgellm {
namespace {

// Indices read through volatiles into noinline functions: the compiler cannot see the
// out-of-bounds access at compile time.
volatile int last_index = 3;
volatile int past_the_end = 4;

[[gnu::noinline]] int read_stack(int index) {
  int buffer[4] = {1, 2, 3, 4};
  return buffer[index];
}

[[gnu::noinline]] int read_heap(int index) {
  int* buffer = static_cast<int*>(std::malloc(4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) buffer[i] = i;
  int value = buffer[index];
  std::free(buffer);
  return value;
}

bool runtime_linked(const char* entry) { return dlsym(RTLD_DEFAULT, entry) != nullptr; }

int shared_counter = 0;

[[gnu::noinline]] void race() {
  std::thread other([] { ++shared_counter; });
  ++shared_counter;
  other.join();
}

TEST(SanitizerReach, TestFileStackAndHeapOverReadsAreReported) {
  if (!runtime_linked("__asan_init")) GTEST_SKIP() << "not an ASan build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EQ(read_stack(last_index), 4);  // in bounds: no report
  EXPECT_EQ(read_heap(last_index), 3);
  EXPECT_DEATH(std::printf("%d\n", read_stack(past_the_end)), "stack-buffer-overflow");
  EXPECT_DEATH(std::printf("%d\n", read_heap(past_the_end)), "heap-buffer-overflow");
}

TEST(SanitizerReach, TestFileDataRaceIsReported) {
  if (!runtime_linked("__tsan_init")) GTEST_SKIP() << "not a TSan build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(race(), "data race");
}

}  // namespace
}  // namespace edgellm
