// Importance matrices: per weight matrix and input column, the sum of the squared activations
// that column multiplied over a calibration text, and how many tokens were summed. The
// quantizers (tools/quant/weighted_quantize.h) weight each element's rounding error by its
// column's mean square, so the columns the model actually drives are kept more exactly.
//
// Files are exchanged with llama.cpp in both directions (llama.cpp v0.5.0 / de3ff81:
// tools/imatrix/imatrix.cpp writes them, common/imatrix-loader.cpp reads them):
//   GGUF (what `llama-imatrix` writes by default): general.type = "imatrix",
//     imatrix.datasets (string array), imatrix.chunk_count (u32), imatrix.chunk_size (u32, tokens
//     per chunk), and per matrix NAME (sorted by name) two F32 tensors:
//       NAME.in_sum2  [n_in] (or [n_in, n_mat] for expert stacks): raw sums of x^2
//       NAME.counts   [1]    (or [1, n_mat]): tokens summed;
//   legacy .dat (`--output-format dat`; read only): int32 n_entries, then per entry int32 len,
//     the name, int32 ncall, int32 nval, float[nval] = (sum / count) * ncall; then optionally
//     int32 chunk count, int32 len and the dataset name. Means times ncall, not raw sums.
// llama-quantize uses sum / count per column (GGUF; a matrix that counted nothing gets 1s) or
// value / ncall (legacy); importance() below computes exactly that.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edgellm::quant {

struct ImatrixEntry {
  std::vector<float> sums;      // [n_mat * n_in]: per column, sum of x^2 (legacy: mean x ncall)
  std::vector<int64_t> counts;  // [n_mat]: tokens summed (legacy: ncall)
  int64_t n_mat() const { return static_cast<int64_t>(counts.size()); }
  int64_t n_in() const { return counts.empty() ? 0 : static_cast<int64_t>(sums.size() / counts.size()); }
};

struct Imatrix {
  std::map<std::string, ImatrixEntry> entries;  // by weight tensor name ("blk.0.attn_q.weight")
  std::vector<std::string> datasets;            // calibration texts, as given
  int32_t chunk_count = 0;                      // chunks of chunk_size tokens collected
  int32_t chunk_size = 0;                       // 0 in legacy files
  bool legacy = false;                          // read from a .dat file

  // The per-column weights for matrix `name` as llama-quantize derives them (see above), n_in x
  // n_mat floats; nullopt when the file has no entry for it.
  std::optional<std::vector<float>> importance(const std::string& name) const;
};

// Reads a GGUF imatrix (by its magic) or else a legacy .dat file. Every value is validated:
// Error(kInvalidFile) naming the file and the entry for a truncated or malformed file, sums that
// are negative or not finite, counts that are negative, fractional or absurd, an in_sum2 without
// its counts (or the reverse), sizes that do not divide, a tensor that is not F32, no entries;
// Error(kIo) when it cannot be opened.
Imatrix read_imatrix(const std::string& path);
// Writes `m` in llama-imatrix's GGUF layout (atomically: a temporary file renamed at the end).
// Error(kInvalidArgument) for an entry whose sizes do not divide.
void write_imatrix(const Imatrix& m, const std::string& path);

}  // namespace edgellm::quant
