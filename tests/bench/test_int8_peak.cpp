// The int8 peak probe's harness (bench/int8_peak.h): one result per kernel of this CPU with the
// thread count and a positive rate, the active ISA's kernel among them, and clear errors for bad
// options. The rate itself is a measurement, not checked here; the kernels' arithmetic is
// tests/kernels/test_int8_peak.cpp's.
#include <gtest/gtest.h>

#include "tools/bench/int8_peak.h"
#include "core/error.h"
#include "kernels/int8_peak.h"

namespace edgellm::bench {
namespace {

TEST(Int8PeakProbe, OneResultPerKernelAtEachThreadCount) {
  const auto kernels = kernels::int8_peak_kernels();
  for (const int threads : {1, 2}) {
    Int8PeakOptions o;
    o.n_threads = threads;
    o.seconds = 0.002;
    o.passes = 2;
    const auto results = measure_int8_peaks(o);
    ASSERT_EQ(results.size(), kernels.size());
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(results[i].kernel, kernels[i].name);
      EXPECT_EQ(results[i].n_threads, threads);
      EXPECT_GT(results[i].macs_per_second, 0.0);
      EXPECT_GT(results[i].iterations, 0);
      EXPECT_GT(results[i].macs_per_cpu_second, 0.0);
      EXPECT_DOUBLE_EQ(results[i].ops_per_second(), 2.0 * results[i].macs_per_second);
      EXPECT_DOUBLE_EQ(results[i].macs_per_second_per_thread(), results[i].macs_per_second / threads);
    }
  }
}

TEST(Int8PeakProbe, ActiveIsaKernelIsOffered) {
  const std::string want = int8_peak_kernel_for_active_isa();
  if (want.empty()) GTEST_SKIP() << "the active ISA has no int8 dot-product instruction";
  bool found = false;
  for (const auto& k : kernels::int8_peak_kernels()) found = found || want == k.name;
  EXPECT_TRUE(found) << want;
}

TEST(Int8PeakProbe, BadOptionsAreRejected) {
  const auto kernels = kernels::int8_peak_kernels();
  if (kernels.empty()) GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no int8 dot-product ISA on this CPU";
  Int8PeakOptions o;
  o.n_threads = 0;
  EXPECT_THROW(measure_int8_peak(kernels[0], o), Error);
  o = {};
  o.passes = 0;
  EXPECT_THROW(measure_int8_peak(kernels[0], o), Error);
  o = {};
  o.seconds = 0;
  EXPECT_THROW(measure_int8_peak(kernels[0], o), Error);
}

}  // namespace
}  // namespace edgellm::bench
