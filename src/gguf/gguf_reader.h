// GGUF v2/v3 reader: maps the file, validates everything before exposing it, and hands out
// zero-copy views (metadata strings and tensor data point into the mapping).
//
// File layout (little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x (string key | u32 value type | value)        string = u64 length + bytes (no NUL)
//   n_tensors x (string name | u32 n_dims | n_dims x u64 ne | u32 ggml type | u64 offset)
//   padding to `general.alignment` (default 32) | tensor data (offsets relative to here)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/tensor_type.h"
#include "platform/mapped_file.h"

namespace edgellm::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* value_type_name(ValueType type);
// Bytes of one element of a scalar type; 0 for kString / kArray / unknown ids.
size_t value_type_size(ValueType type);
// Name of any ggml type id, including the ones EdgeLLM does not support ("iq4_xs"); nullptr if
// the id was never a ggml type.
const char* ggml_type_name(uint32_t raw_id);

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

// One metadata value. Scalars are stored decoded; strings and arrays point into the mapping.
struct Value {
  ValueType type = ValueType::kUint8;
  // Scalars (integers widened; bool as 0/1).
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string_view str;                  // kString
  ValueType array_type = ValueType::kUint8;  // kArray: element type (never kArray: nested arrays are rejected)
  uint64_t array_size = 0;               // kArray: element count
  // kArray of scalars: the packed little-endian elements. kArray of kString: the elements as
  // stored (u64 length + bytes each), array_bytes long, validated at open; string_elements()
  // decodes them. Why not a vector of views kept per array: a 151k-token vocabulary's tokens and
  // merges would hold 4.8 MB of views for the life of the model, needed only while the tokenizer
  // is built.
  const uint8_t* array_data = nullptr;
  size_t array_bytes = 0;

  // Every element of a kString array, as views into the mapping (throws kInvalidArgument for any
  // other value).
  std::vector<std::string_view> string_elements() const;

  bool is_integer() const;
  bool is_float() const { return type == ValueType::kFloat32 || type == ValueType::kFloat64; }
  // Element i of a numeric array, converted.
  int64_t array_int(uint64_t index) const;
  double array_float(uint64_t index) const;
};

struct KeyValue {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  TensorType type = TensorType::F32;
  int n_dims = 0;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};  // ggml order: ne[0] is the contiguous (row) dimension
  uint64_t offset = 0;                   // relative to the data section
  size_t n_bytes = 0;
  const uint8_t* data = nullptr;         // into the mapping

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return tensor_row_bytes(type, ne[0]); }
  std::string shape_string() const;  // "[896, 151936]"
};

struct ReadOptions {
  // Reject files whose tensors overlap each other (true for models; writers never overlap).
  bool reject_overlapping_tensors = true;
};

class GgufFile {
 public:
  // Maps and validates `path`. Throws Error(kIo) if it cannot be opened, Error(kInvalidFile) /
  // Error(kUnsupported) with a message naming the offending field otherwise.
  static std::unique_ptr<GgufFile> open(const std::string& path, const ReadOptions& options = {});
  // Parses an in-memory image (fuzzing, tests). The bytes are copied once.
  static std::unique_ptr<GgufFile> from_bytes(const void* data, size_t size, const ReadOptions& options = {});

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }
  size_t file_size() const { return map_.size(); }
  const MappedFile& mapping() const { return map_; }

  const std::vector<KeyValue>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;

  // Typed getters. std::nullopt when absent; Error(kInvalidFile) when present with a type that
  // cannot be converted (integers convert between widths when the value fits).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;  // also accepts integers
  std::optional<bool> get_bool(std::string_view key) const;
  // A numeric array read as floats / ints (e.g. tokenizer.ggml.scores, token_type).
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  // A string array's elements (decoded on each call: keep the result while it is needed), or
  // nullopt when the key is absent; get_string_array_size only counts them.
  std::optional<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  std::optional<uint64_t> get_string_array_size(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // Bytes of tensor data (all tensors).
  size_t tensor_data_bytes() const;

 private:
  GgufFile() = default;
  void parse(const ReadOptions& options);

  // Prefix of every error message: the path, or "in-memory GGUF".
  std::string where() const;

  MappedFile map_;
  std::unordered_map<std::string_view, size_t> kv_index_;      // key -> index into kv_
  std::unordered_map<std::string_view, size_t> tensor_index_;  // name -> index into tensors_
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<KeyValue> kv_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace edgellm::gguf
