#include "tools/quant/quantize_model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "kernels/kernels.h"
#include "platform/thread_pool.h"
#include "tools/quant/weighted_quantize.h"

namespace edgellm::quant {
namespace {

// GGML_QNT_VERSION: the block layouts written here are those of ggml's quantization version 2.
constexpr uint32_t kQuantizationVersion = 2;

void check_cancel(const QuantizeParams& p, const std::string& what) {
  if (p.cancel != nullptr && p.cancel->load(std::memory_order_relaxed)) {
    throw Error(ErrorCode::kCancelled, "quantization interrupted while writing " + what);
  }
}

int resolve_threads(int n) {
  if (n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Drops source pages [data, data + n) from this process once they have been converted: they are
// clean, file-backed and read-only, so the kernel re-reads them if ever touched again. Without
// this the resident set grows to the whole input file over a run (1 GB for a 0.5B F16 model).
void release_source_pages(const gguf::GgufFile& file, const uint8_t* data, size_t n) {
  if (!file.mapping().is_mapped() || n == 0) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  const uintptr_t p = static_cast<uintptr_t>(page);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(p - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + n + p - 1) & ~(p - 1);
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // a hint: failure is harmless
}

// Converts one tensor [n_rows, width] from src.type to `to`, streaming chunks of rows to the
// sink. Rows are independent, so threads split each chunk's rows.
// `imp`: the tensor's column importance (width floats) or null.
void convert_tensor(const gguf::GgufFile& file, const gguf::TensorInfo& src, TensorType to, const float* imp,
                    const QuantizeParams& params, ThreadPool& pool, gguf::TensorSink& sink) {
  const int64_t width = src.ne[0];
  const int64_t n_rows = src.n_rows();
  const size_t in_row = src.row_bytes();
  const size_t out_row = tensor_row_bytes(to, width);
  const size_t f32_row = static_cast<size_t>(width) * sizeof(float);
  const int64_t chunk_rows =
      std::max<int64_t>(1, std::min<int64_t>(n_rows, static_cast<int64_t>(params.chunk_bytes / std::max<size_t>(f32_row, 1))));
  const int n_threads = pool.max_threads();
  // Per thread, one F32 row for sources that are not F32 already.
  std::vector<std::vector<float>> scratch(static_cast<size_t>(n_threads));
  std::vector<uint8_t> out(static_cast<size_t>(chunk_rows) * out_row);
  const std::string name(src.name);

  for (int64_t r0 = 0; r0 < n_rows; r0 += chunk_rows) {
    check_cancel(params, name);
    const int64_t rows = std::min(chunk_rows, n_rows - r0);
    // Tasks of a few rows each: enough tasks to balance big and little cores.
    const int64_t rows_per_task = std::max<int64_t>(1, rows / (static_cast<int64_t>(n_threads) * 4));
    const int64_t n_tasks = (rows + rows_per_task - 1) / rows_per_task;
    pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
      std::vector<float>& buf = scratch[static_cast<size_t>(thread)];
      const int64_t a = task * rows_per_task;
      const int64_t b = std::min(rows, a + rows_per_task);
      for (int64_t r = a; r < b; ++r) {
        const uint8_t* in = src.data + static_cast<size_t>(r0 + r) * in_row;
        const float* x = nullptr;
        if (src.type == TensorType::F32) {
          x = reinterpret_cast<const float*>(in);
        } else {
          if (buf.size() < static_cast<size_t>(width)) buf.resize(static_cast<size_t>(width));
          kernels::dequantize_row(src.type, in, buf.data(), width);
          x = buf.data();
        }
        quantize_row_weighted(to, x, out.data() + static_cast<size_t>(r) * out_row, width, imp);
      }
    });
    sink.write(out.data(), static_cast<size_t>(rows) * out_row);
    release_source_pages(file, src.data + static_cast<size_t>(r0) * in_row, static_cast<size_t>(rows) * in_row);
  }
}

// Copies a tensor's bytes unchanged, in bounded pieces so cancellation stays responsive.
void copy_tensor(const gguf::GgufFile& file, const gguf::TensorInfo& src, const QuantizeParams& params, gguf::TensorSink& sink) {
  const std::string name(src.name);
  size_t done = 0;
  while (done < src.n_bytes) {
    check_cancel(params, name);
    const size_t n = std::min(params.chunk_bytes, src.n_bytes - done);
    sink.write(src.data + done, n);
    release_source_pages(file, src.data + done, n);
    done += n;
  }
}

// Whether `src`'s imatrix entry fits its rows. A mismatch is refused (the imatrix belongs to
// another model), except for token_embd, whose entry llama.cpp ignores too.
bool importance_fits(const Imatrix& m, const gguf::TensorInfo& src) {
  const auto it = m.entries.find(std::string(src.name));
  if (it == m.entries.end()) return false;
  const size_t n = it->second.sums.size();
  if (static_cast<int64_t>(n) == src.ne[0] && src.ne[2] * src.ne[3] == 1) return true;
  require(src.name == "token_embd.weight", ErrorCode::kInvalidArgument,
          "imatrix has " + std::to_string(n) + " values for '" + std::string(src.name) + "', whose rows have " +
              std::to_string(src.ne[0]) + " columns: the imatrix is for another model");
  return false;
}

// The importance of `src`'s columns for a `to` quantization, or empty when none applies.
std::vector<float> tensor_importance(const QuantizeParams& params, const gguf::TensorInfo& src, TensorType to) {
  if (params.imatrix == nullptr || !uses_importance(to)) return {};
  const std::string name(src.name);
  if (!importance_fits(*params.imatrix, src)) {
    if (params.on_warning) {
      params.on_warning(params.imatrix->entries.count(name) ? "imatrix entry of '" + name + "' has another size: ignored"
                                                            : "no importance data for '" + name + "': quantized without it");
    }
    return {};
  }
  return *params.imatrix->importance(name);
}

}  // namespace

void describe_output(const gguf::GgufFile& in, const std::vector<TypeDecision>& types, const QuantizeParams& params,
                     gguf::GgufWriter& writer) {
  // Every KV is copied in file order (general.alignment included, so the data layout rules stay).
  writer.copy_metadata_from(in);
  writer.set_u32("general.quantization_version", kQuantizationVersion);
  writer.set_u32("general.file_type", static_cast<uint32_t>(params.ftype));
  if (params.imatrix != nullptr) {  // the keys llama-quantize records
    writer.set_string("quantize.imatrix.file", params.imatrix_path);
    if (!params.imatrix->datasets.empty()) writer.set_string("quantize.imatrix.dataset", params.imatrix->datasets[0]);
    writer.set_u32("quantize.imatrix.entries_count", static_cast<uint32_t>(params.imatrix->entries.size()));
    if (params.imatrix->chunk_count > 0) {
      writer.set_u32("quantize.imatrix.chunks_count", static_cast<uint32_t>(params.imatrix->chunk_count));
    }
  }
  const auto& tensors = in.tensors();
  require(types.size() == tensors.size(), ErrorCode::kInternal, "describe_output: one type per tensor expected");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const gguf::TensorInfo& t = tensors[i];
    writer.add_tensor_info(t.name, types[i].type, std::vector<int64_t>(t.ne, t.ne + t.n_dims));
  }
}

PlannerOptions planner_options(const QuantizeParams& params) {
  PlannerOptions popts;
  popts.ftype = params.ftype;
  popts.rules = params.rules;
  popts.pure = params.pure;
  popts.has_imatrix = params.imatrix != nullptr;
  popts.tensor_types = params.tensor_types;
  return popts;
}

std::vector<TypeDecision> plan_tensor_types(const gguf::GgufFile& file, const PlannerOptions& options) {
  const std::vector<TensorDesc> descs = describe_tensors(file);
  TypePlanner planner(options, descs);
  std::vector<TypeDecision> out;
  out.reserve(descs.size());
  for (const TensorDesc& d : descs) out.push_back(planner.decide(d));
  return out;
}

size_t planned_tensor_bytes(const gguf::GgufFile& file, const std::vector<TypeDecision>& types) {
  size_t bytes = 0;
  const auto& tensors = file.tensors();
  for (size_t i = 0; i < tensors.size() && i < types.size(); ++i) {
    bytes += tensor_row_bytes(types[i].type, tensors[i].ne[0]) * static_cast<size_t>(tensors[i].n_rows());
  }
  return bytes;
}

QuantizeSummary quantize_model(const std::string& in_path, const std::string& out_path, const QuantizeParams& params) {
  const auto t0 = std::chrono::steady_clock::now();
  require(!out_path.empty(), ErrorCode::kInvalidArgument, "quantize: empty output path");
  require(in_path != out_path, ErrorCode::kInvalidArgument,
          "quantize: output path '" + out_path + "' is the input file; choose another name");
  std::unique_ptr<gguf::GgufFile> in = gguf::GgufFile::open(in_path);

  const std::vector<TensorDesc> descs = describe_tensors(*in);
  // Decide every type first: refusals (requantizing) happen before any byte is written.
  const std::vector<TypeDecision> decisions = plan_tensor_types(*in, planner_options(params));
  bool warned_q8 = false;
  for (size_t i = 0; i < descs.size(); ++i) {
    const TensorDesc& d = descs[i];
    const TypeDecision& dec = decisions[i];
    // An imatrix for another model is refused before anything is written.
    if (params.imatrix != nullptr && dec.type != d.type && uses_importance(dec.type)) {
      (void)importance_fits(*params.imatrix, in->tensors()[i]);
    }
    if (dec.type != d.type) {
      const auto& from = tensor_type_traits(d.type);
      require(from.is_weight_type, ErrorCode::kUnsupported,
              "tensor '" + d.name + "' has type " + from.name + ", which cannot be converted");
      if (from.is_quantized) {
        if (d.type == TensorType::Q8_0) {
          if (!warned_q8 && params.on_warning) {
            params.on_warning("requantizing from q8_0 (tensor '" + d.name +
                              "' and others): quality is slightly below quantizing the F32/F16 original");
          }
          warned_q8 = true;
        } else {
          require(params.allow_requantize, ErrorCode::kUnsupported,
                  "tensor '" + d.name + "' is already quantized (" + from.name + " -> " +
                      tensor_type_name(dec.type) +
                      "); requantizing loses quality, pass --allow-requantize to do it anyway");
        }
      }
    }
  }

  gguf::GgufWriter writer;
  describe_output(*in, decisions, params, writer);
  QuantizeSummary summary;
  summary.n_tensors = descs.size();

  ThreadPool pool(resolve_threads(params.n_threads));
  const auto& tensors = in->tensors();
  writer.write(out_path, [&](size_t index, const gguf::WriterTensor& wt, gguf::TensorSink& sink) {
    const gguf::TensorInfo& src = tensors.at(index);
    const TypeDecision& dec = decisions.at(index);
    check_cancel(params, wt.name);
    std::vector<float> imp;
    if (dec.type == src.type) {
      copy_tensor(*in, src, params, sink);
    } else {
      imp = tensor_importance(params, src, dec.type);
      convert_tensor(*in, src, dec.type, imp.empty() ? nullptr : imp.data(), params, pool, sink);
    }
    TensorReport rep;
    rep.index = index;
    rep.n_tensors = tensors.size();
    rep.name = wt.name;
    rep.shape = src.shape_string();
    rep.from = src.type;
    rep.to = dec.type;
    rep.n_elements = src.n_elements();
    rep.bytes_in = src.n_bytes;
    rep.bytes_out = wt.n_bytes;
    rep.fallback = dec.fallback;
    rep.weighted = !imp.empty();
    rep.reason = dec.reason;
    summary.n_weight_elements += rep.n_elements;
    summary.bytes_in += rep.bytes_in;
    summary.bytes_out += rep.bytes_out;
    if (dec.type != src.type) ++summary.n_quantized;
    if (dec.fallback) ++summary.n_fallback;
    if (rep.weighted) ++summary.n_weighted;
    if (params.on_tensor) params.on_tensor(rep);
  });
  summary.file_bytes = writer.file_size();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace edgellm::quant
