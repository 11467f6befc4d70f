#include "tools/eval/logprob_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "tools/eval/perplexity.h"

namespace edgellm::eval {
namespace {

constexpr char kMagic[8] = {'E', 'D', 'G', 'L', 'P', 'R', 'B', '1'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 4 * sizeof(uint32_t);
constexpr float kMaxQ = 65535.0f;

size_t record_bytes(uint32_t n_vocab) { return 2 * sizeof(float) + static_cast<size_t>(n_vocab) * sizeof(uint16_t); }

}  // namespace

// ------------------------------------------------------------------ writer

LogProbWriter::LogProbWriter(const std::string& path, const LogProbHeader& header, const std::vector<int32_t>& tokens)
    : path_(path), header_(header) {
  require(header.n_vocab > 0 && header.n_ctx >= 4 && header.first < header.n_ctx - 1, ErrorCode::kInvalidArgument,
          "log-prob file '" + path + "': bad header (n_ctx " + std::to_string(header.n_ctx) + ", n_vocab " +
              std::to_string(header.n_vocab) + ")");
  require(tokens.size() == static_cast<size_t>(header.n_chunk) * header.n_ctx, ErrorCode::kInvalidArgument,
          "log-prob file '" + path + "': " + std::to_string(tokens.size()) + " tokens for " +
              std::to_string(header.n_chunk) + " chunks of " + std::to_string(header.n_ctx));
  f_ = std::fopen(path.c_str(), "wb");
  require(f_ != nullptr, ErrorCode::kIo, "cannot create '" + path + "': " + std::strerror(errno));
  const uint32_t fields[4] = {header.n_ctx, header.n_vocab, header.n_chunk, header.first};
  write(kMagic, sizeof kMagic);
  write(fields, sizeof fields);
  write(tokens.data(), tokens.size() * sizeof(int32_t));
  lp_.resize(header.n_vocab);
  q_.resize(header.n_vocab);
}

LogProbWriter::~LogProbWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

void LogProbWriter::write(const void* data, size_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, f_) != bytes) {
    throw Error(ErrorCode::kIo, "cannot write '" + path_ + "': " + std::strerror(errno));
  }
}

void LogProbWriter::add_logits(const float* logits) {
  require(f_ != nullptr, ErrorCode::kInternal, "log-prob file '" + path_ + "' is already closed");
  const int32_t n = static_cast<int32_t>(header_.n_vocab);
  log_softmax(logits, n, lp_.data());
  const float hi = *std::max_element(lp_.begin(), lp_.end());
  const float lo = std::max(*std::min_element(lp_.begin(), lp_.end()), hi - kLogProbRange);
  const float step = hi > lo ? (hi - lo) / kMaxQ : 1.0f;
  for (int32_t v = 0; v < n; ++v) {
    const float x = std::max(lp_[static_cast<size_t>(v)], lo);
    q_[static_cast<size_t>(v)] = static_cast<uint16_t>(std::min(kMaxQ, std::nearbyint((x - lo) / step)));
  }
  write(&lo, sizeof lo);
  write(&step, sizeof step);
  write(q_.data(), q_.size() * sizeof(uint16_t));
  ++records_;
}

void LogProbWriter::finish() {
  require(f_ != nullptr, ErrorCode::kInternal, "log-prob file '" + path_ + "' is already closed");
  const uint64_t expected = static_cast<uint64_t>(header_.n_chunk) * header_.scored_per_chunk();
  std::FILE* f = f_;
  f_ = nullptr;
  const bool ok = std::fflush(f) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  require(ok && closed, ErrorCode::kIo, "cannot write '" + path_ + "': " + std::strerror(err));
  require(records_ == expected, ErrorCode::kInternal,
          "log-prob file '" + path_ + "': wrote " + std::to_string(records_) + " records, expected " +
              std::to_string(expected));
}

// ------------------------------------------------------------------ reader

LogProbReader::LogProbReader(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "rb");
  require(f_ != nullptr, ErrorCode::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  char magic[8];
  uint32_t fields[4];
  require(std::fread(magic, 1, sizeof magic, f_) == sizeof magic && std::memcmp(magic, kMagic, sizeof magic) == 0,
          ErrorCode::kInvalidFile, "'" + path + "' is not an edgellm log-prob file (bad magic)");
  require(std::fread(fields, 1, sizeof fields, f_) == sizeof fields, ErrorCode::kInvalidFile,
          "'" + path + "': truncated header");
  header_ = {fields[0], fields[1], fields[2], fields[3]};
  require(header_.n_vocab > 0 && header_.n_ctx >= 4 && header_.first < header_.n_ctx - 1 && header_.n_chunk > 0,
          ErrorCode::kInvalidFile,
          "'" + path + "': bad header (n_ctx " + std::to_string(header_.n_ctx) + ", n_vocab " +
              std::to_string(header_.n_vocab) + ", n_chunk " + std::to_string(header_.n_chunk) + ", first " +
              std::to_string(header_.first) + ")");
  // Bounds keep every size product below 2^64 (2^24 * 2^24 * 2^25 bytes) so a hostile header
  // cannot wrap the size check; real files are far smaller (n_vocab ~150k, n_ctx <= 128k).
  constexpr uint32_t kMaxField = 1u << 24;
  require(header_.n_ctx <= kMaxField && header_.n_vocab <= kMaxField && header_.n_chunk <= kMaxField,
          ErrorCode::kInvalidFile, "'" + path + "': header fields exceed 2^24");
  // Validate the size before allocating anything the header asks for.
  const uint64_t n_tok = static_cast<uint64_t>(header_.n_chunk) * header_.n_ctx;
  const uint64_t expected = kHeaderBytes + n_tok * sizeof(int32_t) +
                            static_cast<uint64_t>(header_.n_chunk) * header_.scored_per_chunk() * record_bytes(header_.n_vocab);
  require(std::fseek(f_, 0, SEEK_END) == 0, ErrorCode::kIo, "cannot seek '" + path + "'");
  const long size = std::ftell(f_);
  require(size >= 0 && static_cast<uint64_t>(size) == expected, ErrorCode::kInvalidFile,
          "'" + path + "' has " + std::to_string(size) + " bytes; its header implies " + std::to_string(expected));
  require(std::fseek(f_, static_cast<long>(kHeaderBytes), SEEK_SET) == 0, ErrorCode::kIo, "cannot seek '" + path + "'");
  tokens_.resize(n_tok);
  require(std::fread(tokens_.data(), sizeof(int32_t), n_tok, f_) == n_tok, ErrorCode::kInvalidFile,
          "'" + path + "': truncated tokens");
  for (int32_t t : tokens_) {
    require(t >= 0 && static_cast<uint32_t>(t) < header_.n_vocab, ErrorCode::kInvalidFile,
            "'" + path + "': token id " + std::to_string(t) + " outside vocabulary " + std::to_string(header_.n_vocab));
  }
  q_.resize(header_.n_vocab);
}

LogProbReader::~LogProbReader() {
  if (f_ != nullptr) std::fclose(f_);
}

void LogProbReader::next(float* out) {
  const uint64_t total = static_cast<uint64_t>(header_.n_chunk) * header_.scored_per_chunk();
  require(records_read_ < total, ErrorCode::kInvalidArgument,
          "'" + path_ + "': all " + std::to_string(total) + " records already read");
  float lo = 0, step = 0;
  bool ok = std::fread(&lo, sizeof lo, 1, f_) == 1 && std::fread(&step, sizeof step, 1, f_) == 1 &&
            std::fread(q_.data(), sizeof(uint16_t), q_.size(), f_) == q_.size();
  require(ok, ErrorCode::kInvalidFile, "'" + path_ + "': truncated record " + std::to_string(records_read_));
  require(std::isfinite(lo) && std::isfinite(step) && step > 0, ErrorCode::kInvalidFile,
          "'" + path_ + "': record " + std::to_string(records_read_) + " has a bad scale");
  double max_v = -INFINITY;
  for (size_t v = 0; v < q_.size(); ++v) {
    out[v] = lo + step * static_cast<float>(q_[v]);
    max_v = std::max(max_v, static_cast<double>(out[v]));
  }
  // Renormalise: rounding leaves the stored distribution summing to 1 +- a few 1e-4.
  double sum = 0;
  for (size_t v = 0; v < q_.size(); ++v) sum += std::exp(static_cast<double>(out[v]) - max_v);
  const double log_z = max_v + std::log(sum);
  for (size_t v = 0; v < q_.size(); ++v) out[v] = static_cast<float>(static_cast<double>(out[v]) - log_z);
  ++records_read_;
}

}  // namespace edgellm::eval
