// GGUF v3 writer: metadata in insertion order, tensor infos, then the data section with every
// tensor padded to `general.alignment` (zeros), so any GGUF reader (llama.cpp, ours) loads it.
//
// Two ways to provide tensor data:
//   - add_tensor(name, type, ne, data, bytes): the bytes are copied (or borrowed, see Ownership);
//   - add_tensor_info(name, type, ne) + a TensorDataFn passed to write(): the header is written
//     first, then the callback streams each tensor's bytes, one tensor at a time, so a quantizer
//     never holds more than one tensor of a 7B model in memory.
//
// write(path) writes to a new "<path>.tmp.XXXXXX" (mkstemp: concurrent writers of one path each
// have their own), fsyncs, then renames over `path`; on any failure (disk full, callback
// exception) the temporary file is removed and the error names the path and errno text. A killed
// process leaves its temporary file behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_reader.h"
#include "kernels/tensor_type.h"

namespace edgellm::gguf {

// Where a streaming callback writes one tensor's bytes; may be called any number of times, the
// chunks are concatenated. Writing more or fewer bytes than the tensor's size is an Error.
class TensorSink {
 public:
  virtual ~TensorSink() = default;
  virtual void write(const void* data, size_t bytes) = 0;
};

// A tensor as it will appear in the file.
struct WriterTensor {
  std::string name;
  TensorType type = TensorType::F32;
  int n_dims = 0;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};
  size_t n_bytes = 0;
  uint64_t offset = 0;                 // relative to the data section; set by the writer
  const uint8_t* data = nullptr;       // nullptr: streamed through the TensorDataFn
  std::vector<uint8_t> owned;          // the copy, when added with Ownership::kCopy
};

class GgufWriter {
 public:
  enum class Ownership { kCopy, kBorrow };  // kBorrow: caller keeps `data` alive until write returns
  // Called once per tensor without data, in order; must write exactly t.n_bytes bytes to sink.
  using TensorDataFn = std::function<void(size_t index, const WriterTensor& t, TensorSink& sink)>;
  using SkipKeyFn = std::function<bool(std::string_view key)>;

  GgufWriter() = default;

  // ---- metadata (setting an existing key replaces its value in place: order is preserved)
  void set_u8(std::string_view key, uint8_t v);
  void set_i8(std::string_view key, int8_t v);
  void set_u16(std::string_view key, uint16_t v);
  void set_i16(std::string_view key, int16_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_i64(std::string_view key, int64_t v);
  void set_f32(std::string_view key, float v);
  void set_f64(std::string_view key, double v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_array_u8(std::string_view key, const std::vector<uint8_t>& v);
  void set_array_i8(std::string_view key, const std::vector<int8_t>& v);
  void set_array_u16(std::string_view key, const std::vector<uint16_t>& v);
  void set_array_i16(std::string_view key, const std::vector<int16_t>& v);
  void set_array_u32(std::string_view key, const std::vector<uint32_t>& v);
  void set_array_i32(std::string_view key, const std::vector<int32_t>& v);
  void set_array_u64(std::string_view key, const std::vector<uint64_t>& v);
  void set_array_i64(std::string_view key, const std::vector<int64_t>& v);
  void set_array_f32(std::string_view key, const std::vector<float>& v);
  void set_array_f64(std::string_view key, const std::vector<double>& v);
  void set_array_bool(std::string_view key, const std::vector<bool>& v);
  void set_array_string(std::string_view key, const std::vector<std::string>& v);
  void set_array_string(std::string_view key, const std::vector<std::string_view>& v);
  // Any value read by GgufFile (every type, arrays included).
  void set_value(std::string_view key, const Value& v);
  // Copies every KV of `src` in file order, except keys for which skip(key) is true.
  void copy_metadata_from(const GgufFile& src, const SkipKeyFn& skip = {});

  bool has(std::string_view key) const { return index_.count(std::string(key)) != 0; }
  bool remove(std::string_view key);
  size_t metadata_count() const { return kv_.size(); }
  std::vector<std::string> keys() const;  // in file order

  // Power of two; stored as general.alignment (uint32), as llama.cpp does.
  void set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }

  // ---- tensors (ne in ggml order: ne[0] is the row length; 1..4 dims, each > 0)
  void add_tensor(std::string_view name, TensorType type, const std::vector<int64_t>& ne, const void* data,
                  size_t bytes, Ownership ownership = Ownership::kCopy);
  void add_tensor_info(std::string_view name, TensorType type, const std::vector<int64_t>& ne);
  const std::vector<WriterTensor>& tensors() const { return tensors_; }

  // ---- output
  void write(const std::string& path, const TensorDataFn& fill = {});
  std::vector<uint8_t> write_to_bytes(const TensorDataFn& fill = {});

  // Total file size write() will produce (header + padded data).
  uint64_t file_size() const;

  class Output;  // byte destination (file or memory); defined in gguf_writer.cpp

 private:
  struct Entry {
    std::string key;
    ValueType type;
    std::vector<uint8_t> payload;  // encoded value as it follows the type id in the file
  };

  void put(std::string_view key, ValueType type, std::vector<uint8_t> payload);
  WriterTensor& new_tensor(std::string_view name, TensorType type, const std::vector<int64_t>& ne);
  void layout();  // assigns offsets
  uint64_t header_size() const;
  void emit(Output& out, const TensorDataFn& fill);

  std::vector<Entry> kv_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<WriterTensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
  uint32_t alignment_ = kDefaultAlignment;
};

}  // namespace edgellm::gguf
