// The tensor data of a synthetic model: deterministic random values (weight_generator.h),
// encoded to each tensor's type, streamed into a GgufWriter one slab of rows at a time.
//
// This is the lower-level entry point of src/synth. write_synth_model (synth_model.h) builds its
// tensor list from a catalogue shape and llama.cpp's type recipe; a caller with other needs (the
// test fixture tests/support/synthetic_model.cpp: free-form shapes, one weight type for every
// matrix, tensors with a wrong shape or left out) builds or edits the list itself, sets its own
// metadata on the GgufWriter, and uses this class for the tensor infos and the bytes:
//
//   SynthTensorWriter data(tensors, llama3_rope_factors(shape), seed, n_threads);
//   data.add_infos(w);
//   w.write(path, data.fill_fn());  // or w.write_to_bytes(data.fill_fn())
//
// The values of a tensor depend only on (seed, tensor name, init, element index), never on the
// thread count or on the other tensors of the list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "kernels/tensor_type.h"
#include "platform/thread_pool.h"

namespace edgellm::synth {

// How a tensor's values are made.
enum class TensorInit {
  kWeight,        // N(0, 0.02): matrices (the usual initialiser scale of real checkpoints)
  kScaledWeight,  // N(0, 1 / n_in): unit-variance outputs for unit-variance inputs, so the tiny
                  // widths of test models still give sharp attention (0.02 would make it uniform)
  kNorm,          // 1 + N(0, 0.02): RMSNorm gains
  kBias,          // N(0, 0.02)
  kRopeFactors,   // llama3 rope divisors (deterministic, not random)
};

struct SynthTensor {
  std::string name;
  TensorType type = TensorType::F32;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the row length
  TensorInit init = TensorInit::kWeight;
};

class SynthTensorWriter {
 public:
  // `rope_factors`: the values of a kRopeFactors tensor (llama3_rope_factors of the shape; may be
  // empty when the list has none). n_threads <= 0: std::thread::hardware_concurrency().
  SynthTensorWriter(std::vector<SynthTensor> tensors, std::vector<float> rope_factors, uint64_t seed, int n_threads);

  const std::vector<SynthTensor>& tensors() const { return tensors_; }

  // Declares every tensor on `w` (name, type, shape), in list order.
  void add_infos(gguf::GgufWriter& w) const;

  // Writes the bytes of tensor `index` of the list (exactly its size in its type) to `sink`.
  void fill(size_t index, gguf::TensorSink& sink);

  // fill() as the callback GgufWriter::write / write_to_bytes take; `this` must outlive the call.
  gguf::GgufWriter::TensorDataFn fill_fn();

 private:
  std::vector<SynthTensor> tensors_;
  std::vector<float> rope_factors_;
  uint64_t seed_;
  ThreadPool pool_;
  std::vector<std::vector<float>> scratch_;  // [thread][n_in] F32 row being made
  std::vector<uint8_t> out_;                 // one slab of encoded rows
};

}  // namespace edgellm::synth
