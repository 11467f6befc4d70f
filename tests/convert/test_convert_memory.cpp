// Peak memory of a conversion (label rss: the normal build only; sanitizer allocators and shadow
// memory are not what a user runs). A checkpoint whose largest tensor is 32 MiB of F32 is
// converted in a forked child, which reports its peak RSS (VmHWM) minus its RSS before the
// conversion: the converter must hold about one 1 MiB chunk of a tensor at a time, not the
// tensor (its mapped source pages are dropped chunk by chunk) and never the checkpoint.
// docs/convert.md has the same measurement on a Qwen2.5-0.5B-shaped checkpoint.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/memory_stats.h"
#include "support/hf_checkpoint.h"
#include "support/test_env.h"
#include "tools/convert/convert_model.h"

namespace edgellm {
namespace {

// Bound on the conversion's RSS growth. Measured 9.2 MiB (this host) for a 40 MiB checkpoint with
// a 32 MiB embedding, converted F32 -> F16 in 1 MiB chunks: the tokenizer, the writer's buffer,
// chunk buffers. Holding the whole embedding's source pages adds 32 MiB.
constexpr double kMaxGrowthMiB = 16.0;

double converted_peak_growth_mib(const std::string& dir, const std::string& out) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    double growth = -1;
    try {
      const ProcessMemory before = read_process_memory();
      convert::ConvertParams p;
      p.type = "f16";
      p.n_threads = 1;
      p.chunk_bytes = size_t{1} << 20;
      convert::convert_hf_model(dir, out, p);
      const ProcessMemory after = read_process_memory();
      if (before.valid && after.valid) {
        growth = (static_cast<double>(after.peak_bytes) - static_cast<double>(before.rss_bytes)) / (1 << 20);
      }
    } catch (...) {
    }
    (void)!::write(fds[1], &growth, sizeof growth);
    ::_exit(0);
  }
  ::close(fds[1]);
  double growth = -1;
  (void)!::read(fds[0], &growth, sizeof growth);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return growth;
}

TEST(ConvertMemory, PeakIsAChunkNotATensor) {
  if (!read_process_memory().valid) GTEST_SKIP() << "no /proc/self/status";
  test::TinySpec s;
  s.vocab = 32768;  // the embedding: 32768 x 256 F32 = 32 MiB
  s.embd = 256;
  s.ffn = 256;
  s.heads = 4;
  s.kv_heads = 4;
  s.layers = 1;
  s.tied = true;
  const auto ck = test::write_tiny_checkpoint(s, test::temp_dir() + "/memory");
  const double growth = converted_peak_growth_mib(ck.dir, test::temp_dir() + "/memory.gguf");
  std::printf("conversion peak RSS growth: %.1f MiB (largest tensor 32 MiB, checkpoint 40 MiB)\n", growth);
  ASSERT_GE(growth, 0) << "the child failed";
  EXPECT_LT(growth, kMaxGrowthMiB);
}

}  // namespace
}  // namespace edgellm
