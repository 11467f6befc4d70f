// Single-thread matmul throughput per weight type and ISA (a measurement, not a test):
//   decode:  n_out x n_in matrix x 1 token, reported as GB/s of weight bytes streamed
//   prefill: the same matrix x 64 tokens, reported as GFLOP/s (2 * n_out * n_in * tokens)
// Each type runs in its file layout and, where it has one, in its load-time repacked layout
// (kernels/repack.h: q4_0x16, q4_Kx16, ...), which is what a model loaded with --repack runs.
// Usage: edgellm_kernels_bench [n_out n_in [types...]]   e.g. edgellm_kernels_bench 4096 4096 q4_0 q6_K
#include <time.h>

#include <cstdio>
#include <functional>
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/repack.h"

using namespace edgellm;
using namespace edgellm::kernels;

namespace {

// Thread CPU time, not wall time: on a loaded machine (shared CI runners, other builds) wall
// time mostly measures the scheduler, while CPU time of this thread measures the kernel.
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best of several timed batches (the least disturbed one).
double seconds_per_call(const std::function<void()>& fn, double min_seconds) {
  fn();  // warm up (page in, caches)
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    int iters = 0;
    const double start = thread_seconds();
    double elapsed = 0;
    do {
      fn();
      ++iters;
      elapsed = thread_seconds() - start;
    } while (elapsed < min_seconds / 5);
    best = std::min(best, elapsed / iters);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n_out = argc > 2 ? std::atoll(argv[1]) : 4096;
  const int64_t n_in = argc > 2 ? std::atoll(argv[2]) : 4096;
  std::vector<TensorType> types;
  for (int i = 3; i < argc; ++i) {
    const auto t = tensor_type_from_name(argv[i]);
    if (!t) {
      std::fprintf(stderr, "unknown type %s\n", argv[i]);
      return 2;
    }
    types.push_back(*t);
  }
  if (types.empty()) types = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K};
  constexpr int64_t kPrefillTokens = 64;

  std::mt19937 rng(1);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(n_in)), x(static_cast<size_t>(n_in * kPrefillTokens));
  for (auto& v : x) v = g(rng);

  // Times one matrix of `type` (file or repacked layout) on every ISA.
  const auto bench_layout = [&](TensorType type, const std::vector<uint8_t>& w) {
    const size_t row_bytes = tensor_row_bytes(type, n_in);
    for (Isa isa : supported_isas()) {
      if (is_packed_type(type) && isa == Isa::kScalar) continue;  // the scalar twin: a reference, not a kernel
      set_active_isa(isa);
      const size_t xq_row = activation_row_bytes(type, n_in);
      std::vector<uint8_t> xq(xq_row * kPrefillTokens);
      std::vector<float> y(static_cast<size_t>(n_out * kPrefillTokens));
      // Activation quantization is part of every matmul in the engine, so it is timed too.
      auto run = [&](int64_t tokens) {
        for (int64_t t = 0; t < tokens; ++t) quantize_activation_row(type, x.data() + t * n_in, xq.data() + t * xq_row, n_in);
        matmul(type, n_in, w.data(), row_bytes, 0, n_out, xq.data(), xq_row, tokens, y.data(), n_out);
      };
      const double min_s = isa == Isa::kScalar ? 0.3 : 0.5;
      const double t1 = seconds_per_call([&] { run(1); }, min_s);
      const double t64 = seconds_per_call([&] { run(kPrefillTokens); }, min_s);
      const double gbs = static_cast<double>(w.size()) / t1 / 1e9;
      const double gflops = 2.0 * static_cast<double>(n_out) * static_cast<double>(n_in) * kPrefillTokens / t64 / 1e9;
      std::printf("%-8s %-7s %12.2f %14.2f\n", tensor_type_name(type), isa_name(isa), gbs, gflops);
      std::fflush(stdout);
    }
  };

  std::printf("%-8s %-7s %12s %14s\n", "type", "isa", "1 tok GB/s", "64 tok GFLOP/s");
  for (TensorType type : types) {
    const size_t row_bytes = tensor_row_bytes(type, n_in);
    std::vector<uint8_t> w(row_bytes * static_cast<size_t>(n_out));
    for (int64_t r = 0; r < n_out; ++r) {
      for (auto& v : wf) v = g(rng);
      quantize_row(type, wf.data(), w.data() + r * row_bytes, n_in);
    }
    bench_layout(type, w);
    const auto packed = packed_type_for(type);
    if (packed && can_repack(type, n_in, n_out)) {
      std::vector<uint8_t> pw(tensor_row_bytes(*packed, n_in) * static_cast<size_t>(n_out));
      repack_rows(type, w.data(), pw.data(), n_in, 0, n_out);
      bench_layout(*packed, pw);
    }
  }
  return 0;
}
