// Model quantization: GGUF in, GGUF v3 out, one tensor at a time.
//
// Memory: the input is read from its mapping; each tensor is converted in chunks of rows (every
// thread quantizes a slice of the chunk into one output buffer) and handed to the GGUF writer's
// streaming sink, so peak memory is one chunk, never the model.
// Atomicity: the writer fills "<out>.tmp.XXXXXX" (core/atomic_file.h) in the output directory, fsyncs and renames it over
// `out` only at the end; a failure or cancellation (SIGINT in the CLI) removes the temporary file
// and leaves `out` as it was.
// Determinism: every row is quantized independently by the reference kernels, so the bytes do
// not depend on the thread count or scheduling.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "kernels/tensor_type.h"
#include "tools/quant/imatrix.h"
#include "tools/quant/quant_rules.h"

namespace edgellm::quant {

// One tensor of the output, reported as soon as it is written.
struct TensorReport {
  size_t index = 0;       // position in the file
  size_t n_tensors = 0;
  std::string name;
  std::string shape;      // "[64, 512]"
  TensorType from = TensorType::F32;
  TensorType to = TensorType::F32;
  int64_t n_elements = 0;
  size_t bytes_in = 0;
  size_t bytes_out = 0;
  bool fallback = false;
  bool weighted = false;  // quantized with its importance-matrix entry
  std::string reason;     // why this type (rule, mix, fallback note); may be empty
};

struct QuantizeParams {
  FileType ftype = FileType::kMostlyQ8_0;
  std::vector<TypeRule> rules;     // first match wins
  bool pure = false;               // no llama.cpp mix adjustments
  // Exact tensor name -> type (the mixed recipe's choices); before rules (PlannerOptions).
  std::map<std::string, TensorType> tensor_types;
  // Importance matrix (tools/quant/imatrix.h), or null: every type that has a weighted search
  // (tools/quant/weighted_quantize.h) uses its tensor's entry; a tensor without one is quantized
  // unweighted with a warning; an entry of another width is an Error(kInvalidArgument) (except
  // token_embd, whose entry llama.cpp ignores too). Recorded as llama-quantize does:
  // quantize.imatrix.file (imatrix_path), .dataset, .entries_count, .chunks_count.
  const Imatrix* imatrix = nullptr;
  std::string imatrix_path;
  bool allow_requantize = false;   // accept quantized sources other than Q8_0
  int n_threads = 0;               // 0 = hardware concurrency
  // Rows per conversion chunk are chosen so a chunk's F32 input stays below this many bytes.
  size_t chunk_bytes = size_t{16} << 20;
  // Polled before every chunk; when set the run stops with Error(kCancelled).
  const std::atomic<bool>* cancel = nullptr;
  // Called after each tensor is written (progress). An exception thrown here aborts the run like
  // a write error would (tests use it to inject failures).
  std::function<void(const TensorReport&)> on_tensor;
  // Warnings (requantizing from Q8_0, ...).
  std::function<void(const std::string&)> on_warning;
};

struct QuantizeSummary {
  size_t n_tensors = 0;
  size_t n_quantized = 0;        // tensors whose type changed
  size_t n_fallback = 0;
  size_t n_weighted = 0;         // tensors quantized with their imatrix entry
  int64_t n_weight_elements = 0; // elements of every tensor
  size_t bytes_in = 0;           // tensor data, input
  size_t bytes_out = 0;          // tensor data, output
  uint64_t file_bytes = 0;       // size of the written file
  double seconds = 0;
  // Bits per weight of the tensor data (all tensors, norms included), as llama.cpp reports it.
  double bits_per_weight() const {
    return n_weight_elements > 0 ? 8.0 * static_cast<double>(bytes_out) / static_cast<double>(n_weight_elements) : 0;
  }
};

// The type of every tensor of `file`, in file order, as quantize_model() would choose them.
std::vector<TypeDecision> plan_tensor_types(const gguf::GgufFile& file, const PlannerOptions& options);
// Bytes of tensor data a file with these types would hold (what QuantizeSummary::bytes_out reports).
size_t planned_tensor_bytes(const gguf::GgufFile& file, const std::vector<TypeDecision>& types);
// The planner options quantize_model() derives from `params`.
PlannerOptions planner_options(const QuantizeParams& params);
// The output's metadata and tensor list as quantize_model() writes them, in `writer` (no data):
// writer.file_size() is then the size of the file it would write.
void describe_output(const gguf::GgufFile& in, const std::vector<TypeDecision>& types, const QuantizeParams& params,
                     gguf::GgufWriter& writer);

// Quantizes `in_path` into `out_path`. Errors: kIo (cannot read/write; the message names the
// path and the system error, e.g. "No space left on device"), kInvalidFile (malformed input),
// kUnsupported (requantizing from a quantized type without allow_requantize, a tensor type this
// tool cannot convert), kCancelled. `out_path` is untouched on any error.
QuantizeSummary quantize_model(const std::string& in_path, const std::string& out_path, const QuantizeParams& params);

}  // namespace edgellm::quant
