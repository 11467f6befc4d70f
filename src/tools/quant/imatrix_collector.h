// Collects an importance matrix (tools/quant/imatrix.h) by running a model over a calibration
// text, the way `llama-imatrix -m MODEL -f TEXT -c CTX` does:
//   - the text is tokenized with BOS and cut into chunks of n_ctx tokens (the tail that does not
//     fill a chunk is dropped; at least 2 chunks' worth of tokens are required); each chunk is
//     evaluated from an empty KV cache with its first token replaced by BOS;
//   - every token of a chunk passes through every matrix; for each weight the collector adds
//     x[c]^2 of each input row to column c's sum (in double) and counts the rows;
//   - only the layers' matrices ("blk.*") are collected, as llama-imatrix does by default; with
//     process_output also the output head (llama-imatrix --process-output; a tied head is
//     recorded under its tensor's name, token_embd.weight, which llama.cpp would skip);
//   - the perplexity of the second half of each chunk is reported as llama-imatrix prints it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "core/progress.h"
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/matmul_observer.h"
#include "tools/quant/imatrix.h"

namespace edgellm {
class Model;
}

namespace edgellm::quant {

// Progress of a long tool run: core/progress.h's callback (fraction, "chunk 3/38").
using edgellm::ProgressFn;

// The MatmulObserver that sums squared inputs per weight; usable on any Context.
class ImatrixCollector : public MatmulObserver {
 public:
  explicit ImatrixCollector(bool process_output = false) : process_output_(process_output) {}
  // Tells the collector which weight is the output head (its name when tied is token_embd's).
  void set_output_name(std::string name) { output_name_ = std::move(name); }

  // Error(kInvalidArgument) for non-finite activations (the model or text is broken; llama.cpp
  // aborts there too), or a weight seen with two widths.
  void on_matmul_input(std::string_view weight, const float* x, int64_t n_tokens, int64_t n_in) override;

  // What has been summed so far, as a file's entries (sums rounded to F32, counts per matrix).
  Imatrix result() const;
  int64_t n_weights() const { return static_cast<int64_t>(acc_.size()); }

 private:
  struct Acc {
    std::vector<double> sums;
    int64_t count = 0;
  };
  bool process_output_;
  std::string output_name_;
  std::map<std::string, Acc, std::less<>> acc_;
};

struct ImatrixParams {
  int32_t n_ctx = 512;      // tokens per chunk (llama-imatrix -c; 512 by default there too)
  int32_t n_batch = 512;    // tokens per forward call
  int32_t n_threads = 0;    // 0 = engine default
  int32_t max_chunks = -1;  // -1 = every chunk the text fills (--chunks)
  bool process_output = false;
  bool compute_ppl = true;
  std::string dataset;                        // recorded in imatrix.datasets (the text file's name)
  const std::atomic<bool>* cancel = nullptr;  // polled between chunks -> Error(kCancelled)
  ProgressFn progress;                        // after each chunk
};

struct ImatrixRun {
  Imatrix imatrix;
  int64_t n_tokens = 0;  // of the text, with BOS
  int32_t n_chunk = 0;
  double ppl = 0;  // second half of each chunk (0 without compute_ppl)
  double ppl_error = 0;
  double seconds = 0;
};

// Error(kInvalidArgument) when the text has fewer than 2 * n_ctx tokens.
ImatrixRun compute_imatrix(const Model& model, const std::vector<int32_t>& tokens, bool add_bos, int32_t bos,
                           const ImatrixParams& params);

}  // namespace edgellm::quant
