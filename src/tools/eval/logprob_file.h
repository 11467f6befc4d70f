// The KL-divergence base file: the reference model's log-probabilities at every scored position
// of a perplexity run, plus the exact tokens evaluated, so a quantized model can be compared on
// the same input without the text or the reference model.
//
// Layout (little-endian):
//   char[8]  magic "EDGLPRB1"
//   u32      n_ctx, n_vocab, n_chunk, first      (first = first scored position of a chunk)
//   i32      tokens[n_chunk * n_ctx]             as evaluated (BOS substitution already applied)
//   then n_chunk * (n_ctx - 1 - first) records in chunk order, each:
//     f32 lo, f32 step, u16 q[n_vocab]           log p(v) ~= lo + step * q[v]
//
// Why uint16 log-probs (as llama.cpp does): a 150k vocabulary makes float records 600 KB per
// position. Each record spans [lo, max log p] with lo = max(min log p, max log p - kLogProbRange),
// so the rounding error is at most step / 2 = kLogProbRange / 131070 ~ 3e-4 nats; entries below
// lo (probability under e^-40 of the top token's) are clamped to lo. The reader renormalises each
// record so the stored distribution sums to 1 again.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace edgellm::eval {

struct LogProbHeader {
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  uint32_t n_chunk = 0;
  uint32_t first = 0;
  uint32_t scored_per_chunk() const { return n_ctx - 1 - first; }
};

// Natural-log width a record covers below its most probable entry.
inline constexpr float kLogProbRange = 40.0f;

class LogProbWriter {
 public:
  // Creates `path` and writes the header and tokens (tokens.size() must be n_chunk * n_ctx).
  // Throws Error(kIo) naming the path.
  LogProbWriter(const std::string& path, const LogProbHeader& header, const std::vector<int32_t>& tokens);
  ~LogProbWriter();
  LogProbWriter(const LogProbWriter&) = delete;
  LogProbWriter& operator=(const LogProbWriter&) = delete;

  // Appends one record from raw logits (n_vocab floats).
  void add_logits(const float* logits);
  // Flushes and closes; throws Error(kIo) when any write failed. Checks the record count.
  void finish();

 private:
  void write(const void* data, size_t bytes);
  std::string path_;
  LogProbHeader header_;
  std::FILE* f_ = nullptr;
  uint64_t records_ = 0;
  std::vector<float> lp_;
  std::vector<uint16_t> q_;
};

class LogProbReader {
 public:
  // Opens and validates the header against the file size. Throws Error(kIo) / Error(kInvalidFile).
  explicit LogProbReader(const std::string& path);
  ~LogProbReader();
  LogProbReader(const LogProbReader&) = delete;
  LogProbReader& operator=(const LogProbReader&) = delete;

  const LogProbHeader& header() const { return header_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Reads the next record as normalised log-probabilities (n_vocab floats) into out.
  void next(float* out);

 private:
  std::string path_;
  LogProbHeader header_;
  std::vector<int32_t> tokens_;
  std::FILE* f_ = nullptr;
  uint64_t records_read_ = 0;
  std::vector<uint16_t> q_;
};

}  // namespace edgellm::eval
