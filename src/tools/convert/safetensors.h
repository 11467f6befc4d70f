// Reader of one safetensors file (Hugging Face's weight format), mapped, never copied:
//
//   [u64 little-endian N][N bytes of JSON header][data]
//   header: {"__metadata__": {"format": "pt"},
//            "model.embed_tokens.weight": {"dtype": "BF16", "shape": [151936, 896],
//                                          "data_offsets": [0, 272269312]}, ...}
//
// data_offsets are [begin, end) relative to the data section. Validation (every failure is an
// Error(kInvalidFile) naming the file and, where there is one, the tensor): the header length
// fits the file and a 100 MB cap (the reference implementation's limit); the header is a JSON
// object; every tensor has a known dtype, a shape of non-negative integers whose byte size
// (elements x dtype size, overflow-checked) equals end - begin; the tensors tile the data section
// exactly, without holes or overlaps, as the format requires. A file that passes cannot make a
// reader step outside the mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/tensor_type.h"
#include "platform/mapped_file.h"

namespace edgellm::convert {

// The dtype names of the format. Only F32, F16 and BF16 map to a TensorType (what the converter
// reads); the others are parsed (so their sizes are validated) and refused when a tensor of that
// dtype is actually needed.
enum class SafetensorsDtype {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kI64,
  kU64,
  kF64
};
const char* dtype_name(SafetensorsDtype dtype);
size_t dtype_size(SafetensorsDtype dtype);
// F32 / F16 / BF16 -> the tensor type with the same bits; false for the others.
bool dtype_tensor_type(SafetensorsDtype dtype, TensorType* out);

struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;  // as stored: row-major, shape[0] outermost (HF [out, in] for a Linear)
  int64_t n_elements = 0;
  size_t n_bytes = 0;
  size_t offset = 0;  // of the first byte, from the start of the file
  const uint8_t* data = nullptr;
  std::string shape_string() const;  // "[151936, 896]"
};

class SafetensorsFile {
 public:
  // Maps and validates `path`. Errors: kIo (cannot open / map), kInvalidFile (see above).
  static SafetensorsFile open(const std::string& path);
  // The same over bytes held in memory (tests, fuzzing); `origin` names it in errors.
  static SafetensorsFile from_bytes(const void* data, size_t size, const std::string& origin);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;

  const std::string& path() const { return origin_; }
  // In header order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  // "__metadata__" (string values only, as the format specifies).
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  size_t header_bytes() const { return header_bytes_; }
  const MappedFile& mapping() const { return file_; }

  // The pages of `t` are no longer needed by this process (converted and written): drop them
  // from the resident set. A hint; a later read faults them in again.
  void release(const SafetensorsTensor& t) const { file_.release_pages(t.offset, t.n_bytes); }

 private:
  SafetensorsFile() = default;
  void parse();

  MappedFile file_;
  std::string origin_;
  size_t header_bytes_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace edgellm::convert
