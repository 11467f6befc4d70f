#include "tools/convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/json.h"

namespace edgellm::convert {
namespace {

// The reference implementation (huggingface/safetensors) refuses headers above 100 MB; a real
// header is a few hundred KB (one entry per tensor).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Dimensions beyond any real tensor; keeps the element-count product far from overflow.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr size_t kMaxRank = 8;

struct DtypeInfo {
  SafetensorsDtype dtype;
  const char* name;
  size_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {SafetensorsDtype::kBool, "BOOL", 1},      {SafetensorsDtype::kU8, "U8", 1},
    {SafetensorsDtype::kI8, "I8", 1},          {SafetensorsDtype::kF8E4M3, "F8_E4M3", 1},
    {SafetensorsDtype::kF8E5M2, "F8_E5M2", 1}, {SafetensorsDtype::kI16, "I16", 2},
    {SafetensorsDtype::kU16, "U16", 2},        {SafetensorsDtype::kF16, "F16", 2},
    {SafetensorsDtype::kBF16, "BF16", 2},      {SafetensorsDtype::kI32, "I32", 4},
    {SafetensorsDtype::kU32, "U32", 4},        {SafetensorsDtype::kF32, "F32", 4},
    {SafetensorsDtype::kI64, "I64", 8},        {SafetensorsDtype::kU64, "U64", 8},
    {SafetensorsDtype::kF64, "F64", 8},
};

const DtypeInfo& info(SafetensorsDtype d) {
  for (const auto& i : kDtypes) {
    if (i.dtype == d) return i;
  }
  return kDtypes[0];  // unreachable: every enumerator is listed
}

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw Error(ErrorCode::kInvalidFile, "safetensors file '" + origin + "': " + what);
}

// A non-negative integer that a JSON number holds exactly.
uint64_t header_uint(const Json& v, const std::string& origin, const std::string& what) {
  if (!v.is_number()) fail(origin, what + " is not a number");
  const double d = v.as_number();
  if (!(d >= 0) || d != static_cast<double>(static_cast<uint64_t>(d)) || d > 9.007199254740992e15) {
    fail(origin, what + " is not a non-negative integer below 2^53");
  }
  return static_cast<uint64_t>(d);
}

}  // namespace

const char* dtype_name(SafetensorsDtype dtype) {
  return info(dtype).name;
}
size_t dtype_size(SafetensorsDtype dtype) {
  return info(dtype).size;
}

bool dtype_tensor_type(SafetensorsDtype dtype, TensorType* out) {
  switch (dtype) {
    case SafetensorsDtype::kF32: *out = TensorType::F32; return true;
    case SafetensorsDtype::kF16: *out = TensorType::F16; return true;
    case SafetensorsDtype::kBF16: *out = TensorType::BF16; return true;
    default: return false;
  }
}

std::string SafetensorsTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::map(path);
  f.origin_ = path;
  f.parse();
  return f;
}

SafetensorsFile SafetensorsFile::from_bytes(const void* data, size_t size, const std::string& origin) {
  SafetensorsFile f;
  f.file_ = MappedFile::from_bytes(data, size);
  f.origin_ = origin;
  f.parse();
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::parse() {
  const size_t size = file_.size();
  if (size < 8) {
    fail(origin_, "truncated: " + std::to_string(size) + " bytes, but the file starts with an 8-byte header length");
  }
  uint64_t n = 0;
  std::memcpy(&n, file_.data(), 8);  // little-endian; the project only builds for little-endian hosts
  if (n > size - 8) {
    fail(origin_, "header length " + std::to_string(n) + " exceeds the " + std::to_string(size - 8) +
                      " bytes after the length field (truncated or not a safetensors file)");
  }
  if (n > kMaxHeaderBytes) fail(origin_, "header length " + std::to_string(n) + " is above the 100 MB limit");
  header_bytes_ = static_cast<size_t>(n);
  const size_t data_start = 8 + header_bytes_;
  const size_t data_size = size - data_start;

  Json header;
  try {
    header = Json::parse(std::string_view(reinterpret_cast<const char*>(file_.data()) + 8, header_bytes_), 64);
  } catch (const Error& e) {
    fail(origin_, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(origin_, "header is not a JSON object");

  for (const auto& [key, value] : header.as_object()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(origin_, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.as_object()) {
        if (!mv.is_string()) fail(origin_, "__metadata__ value '" + mk + "' is not a string");
        metadata_.emplace_back(mk, mv.as_string());
      }
      continue;
    }
    const std::string what = "tensor '" + key + "'";
    if (key.empty()) fail(origin_, "a tensor has an empty name");
    if (index_.count(key)) fail(origin_, what + " is listed twice");
    if (!value.is_object()) fail(origin_, what + ": entry is not an object");
    SafetensorsTensor t;
    t.name = key;

    const Json* dtype = value.find("dtype");
    if (!dtype || !dtype->is_string()) fail(origin_, what + ": no dtype string");
    bool known = false;
    for (const auto& i : kDtypes) {
      if (dtype->as_string() == i.name) {
        t.dtype = i.dtype;
        known = true;
      }
    }
    if (!known) fail(origin_, what + ": unknown dtype '" + dtype->as_string().substr(0, 32) + "'");

    const Json* shape = value.find("shape");
    if (!shape || !shape->is_array()) fail(origin_, what + ": no shape array");
    if (shape->size() > kMaxRank) {
      fail(origin_,
           what + ": " + std::to_string(shape->size()) + " dimensions (at most " + std::to_string(kMaxRank) + ")");
    }
    int64_t elements = 1;
    for (const Json& d : shape->as_array()) {
      const uint64_t dim = header_uint(d, origin_, what + " shape entry");
      if (dim > static_cast<uint64_t>(kMaxDim))
        fail(origin_, what + ": dimension " + std::to_string(dim) + " is too large");
      if (dim != 0 && elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dim)) {
        fail(origin_, what + ": element count overflows");
      }
      elements *= static_cast<int64_t>(dim);
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    t.n_elements = elements;
    const size_t esize = dtype_size(t.dtype);
    if (static_cast<uint64_t>(elements) > std::numeric_limits<uint64_t>::max() / esize) {
      fail(origin_, what + ": byte size overflows");
    }
    const uint64_t bytes = static_cast<uint64_t>(elements) * esize;

    const Json* offsets = value.find("data_offsets");
    if (!offsets || !offsets->is_array() || offsets->size() != 2) {
      fail(origin_, what + ": data_offsets is not a [begin, end] pair");
    }
    const uint64_t begin = header_uint(offsets->at(size_t{0}), origin_, what + " data_offsets begin");
    const uint64_t end = header_uint(offsets->at(size_t{1}), origin_, what + " data_offsets end");
    if (begin > end || end > data_size) {
      fail(origin_, what + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                        ") lie outside the " + std::to_string(data_size) + "-byte data section");
    }
    if (end - begin != bytes) {
      fail(origin_, what + ": " + std::string(dtype_name(t.dtype)) + " " + t.shape_string() + " needs " +
                        std::to_string(bytes) + " bytes but data_offsets give " + std::to_string(end - begin));
    }
    t.n_bytes = static_cast<size_t>(bytes);
    t.offset = data_start + static_cast<size_t>(begin);
    t.data = file_.data() + t.offset;
    index_.emplace(key, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section is exactly the concatenation of the tensors (the format forbids holes and
  // overlaps; a lying header that points two tensors at the same bytes is refused here).
  std::vector<const SafetensorsTensor*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->n_bytes < b->n_bytes;
  });
  size_t expected = data_start;
  for (const SafetensorsTensor* t : by_offset) {
    if (t->offset != expected) {
      fail(origin_, "tensor '" + t->name + "' starts at data offset " + std::to_string(t->offset - data_start) +
                        (t->offset < expected ? " inside the previous tensor's bytes" : " after a gap") +
                        " (expected " + std::to_string(expected - data_start) + ")");
    }
    expected += t->n_bytes;
  }
  if (expected != size) {
    fail(origin_, "the tensors cover " + std::to_string(expected - data_start) + " of the " +
                      std::to_string(data_size) + " data bytes");
  }
}

}  // namespace edgellm::convert
