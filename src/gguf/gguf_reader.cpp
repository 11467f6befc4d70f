#include "gguf/gguf_reader.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"

namespace edgellm::gguf {
namespace {

// Values are decoded with memcpy into host integers: GGUF is little-endian and so is every target.
static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kMinVersion = 2;
constexpr uint32_t kMaxVersion = 3;
// Smallest possible encodings, used to reject absurd counts before allocating anything:
// a KV is at least key length (8) + value type (4) + a 1-byte value; a tensor info is at least
// name length (8) + n_dims (4) + one ne (8) + type (4) + offset (8); an array string element is
// at least its 8-byte length.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
constexpr uint64_t kMinStringBytes = 8;

// Every ggml type id ever assigned, so an unsupported one can be named in the error message.
// Index = id; nullptr = id never used / retired without a name worth printing.
constexpr const char* kGgmlTypeNames[] = {
    "f32",      "f16",      "q4_0",     "q4_1",       "q4_2 (removed)", "q4_3 (removed)", "q5_0",
    "q5_1",     "q8_0",     "q8_1",     "q2_K",       "q3_K",           "q4_K",           "q5_K",
    "q6_K",     "q8_K",     "iq2_xxs",  "iq2_xs",     "iq3_xxs",        "iq1_s",          "iq4_nl",
    "iq3_s",    "iq2_s",    "iq4_xs",   "i8",         "i16",            "i32",            "i64",
    "f64",      "iq1_m",    "bf16",     "q4_0_4_4",   "q4_0_4_8",       "q4_0_8_8",       "tq1_0",
    "tq2_0",    "iq4_nl_4_4", "iq4_nl_4_8", "iq4_nl_8_8", "mxfp4",
};

std::string quote(std::string_view s) {
  // Names come from hostile files: cap the length and escape control bytes.
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Bounds-checked little-endian reader over the mapping. Every read names what it was reading so a
// truncation error says where the file ends.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& where) : data_(data), size_(size), where_(where) {}

  size_t pos() const { return pos_; }
  const uint8_t* at(size_t pos) const { return data_ + pos; }
  size_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(ErrorCode code, const std::string& msg) const { throw Error(code, where_ + ": " + msg); }

  const uint8_t* take(uint64_t n, const std::string& what) {
    if (n > remaining()) {
      fail(ErrorCode::kInvalidFile, "truncated " + what + " at offset " + std::to_string(pos_) + ": needs " +
                                        std::to_string(n) + " bytes, only " + std::to_string(remaining()) +
                                        " left (file is " + std::to_string(size_) + " bytes)");
    }
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }

  template <typename T>
  T read(const std::string& what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }

  std::string_view read_string(const std::string& what) {
    return read_string_lazy([&what] { return what; });
  }

  // The same, building the description only on failure: string arrays hold 150k+ elements and
  // formatting a message for each would dominate load time.
  template <typename Describe>
  std::string_view read_string_lazy(const Describe& describe) {
    const size_t at = pos_;
    if (remaining() < sizeof(uint64_t)) take(sizeof(uint64_t), describe() + " length");
    uint64_t len;
    std::memcpy(&len, data_ + pos_, sizeof(len));
    pos_ += sizeof(len);
    if (len > remaining()) {
      fail(ErrorCode::kInvalidFile, describe() + " at offset " + std::to_string(at) + " claims " + std::to_string(len) +
                                        " bytes but only " + std::to_string(remaining()) + " remain in the file");
    }
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(len);
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(len)};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& where_;
};

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kFloat64); }

// Decodes one scalar at p (size already checked) into v.
void decode_scalar(ValueType type, const uint8_t* p, Value& v) {
  auto load = [p](auto tag) {
    decltype(tag) x;
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (type) {
    case ValueType::kUint8: v.u = load(uint8_t{}); v.i = static_cast<int64_t>(v.u); v.f = static_cast<double>(v.u); break;
    case ValueType::kUint16: v.u = load(uint16_t{}); v.i = static_cast<int64_t>(v.u); v.f = static_cast<double>(v.u); break;
    case ValueType::kUint32: v.u = load(uint32_t{}); v.i = static_cast<int64_t>(v.u); v.f = static_cast<double>(v.u); break;
    case ValueType::kUint64: v.u = load(uint64_t{}); v.i = static_cast<int64_t>(v.u); v.f = static_cast<double>(v.u); break;
    case ValueType::kInt8: v.i = load(int8_t{}); v.u = static_cast<uint64_t>(v.i); v.f = static_cast<double>(v.i); break;
    case ValueType::kInt16: v.i = load(int16_t{}); v.u = static_cast<uint64_t>(v.i); v.f = static_cast<double>(v.i); break;
    case ValueType::kInt32: v.i = load(int32_t{}); v.u = static_cast<uint64_t>(v.i); v.f = static_cast<double>(v.i); break;
    case ValueType::kInt64: v.i = load(int64_t{}); v.u = static_cast<uint64_t>(v.i); v.f = static_cast<double>(v.i); break;
    case ValueType::kFloat32: v.f = load(float{}); break;
    case ValueType::kFloat64: v.f = load(double{}); break;
    case ValueType::kBool: v.u = load(uint8_t{}); v.i = static_cast<int64_t>(v.u); v.f = static_cast<double>(v.u); break;
    case ValueType::kString:
    case ValueType::kArray: break;
  }
}

// Reads a value of `type` for key `key`; nested arrays are rejected.
Value read_value(Cursor& cur, ValueType type, std::string_view key) {
  Value v;
  v.type = type;
  const std::string what = "value of " + quote(key);
  if (type == ValueType::kString) {
    v.str = cur.read_string(what);
    return v;
  }
  if (type != ValueType::kArray) {
    const uint8_t* p = cur.take(value_type_size(type), what);
    decode_scalar(type, p, v);
    if (type == ValueType::kBool && v.u > 1) {
      cur.fail(ErrorCode::kInvalidFile, "bool " + what + " is " + std::to_string(v.u) + " (must be 0 or 1)");
    }
    return v;
  }
  const uint32_t raw_elem = cur.read<uint32_t>("array element type of " + quote(key));
  if (!valid_value_type(raw_elem)) {
    cur.fail(ErrorCode::kInvalidFile, "array " + quote(key) + " has unknown element type id " + std::to_string(raw_elem));
  }
  const auto elem = static_cast<ValueType>(raw_elem);
  if (elem == ValueType::kArray) {
    cur.fail(ErrorCode::kUnsupported, "array " + quote(key) + " contains nested arrays, which GGUF readers do not support");
  }
  const size_t count_at = cur.pos();
  const uint64_t count = cur.read<uint64_t>("array length of " + quote(key));
  v.array_type = elem;
  v.array_size = count;
  if (elem == ValueType::kString) {
    if (count > cur.remaining() / kMinStringBytes) {
      cur.fail(ErrorCode::kInvalidFile, "string array " + quote(key) + " at offset " + std::to_string(count_at) +
                                            " claims " + std::to_string(count) + " elements but only " +
                                            std::to_string(cur.remaining()) + " bytes remain in the file");
    }
    const size_t first = cur.pos();
    for (uint64_t i = 0; i < count; ++i) {
      (void)cur.read_string_lazy([&] { return "element " + std::to_string(i) + " of " + quote(key); });
    }
    v.array_data = cur.at(first);
    v.array_bytes = cur.pos() - first;
    return v;
  }
  const size_t esize = value_type_size(elem);
  if (count > cur.remaining() / esize) {
    cur.fail(ErrorCode::kInvalidFile, std::string(value_type_name(elem)) + " array " + quote(key) + " at offset " +
                                          std::to_string(count_at) + " claims " + std::to_string(count) +
                                          " elements but only " + std::to_string(cur.remaining()) +
                                          " bytes remain in the file");
  }
  v.array_data = cur.take(count * esize, "array data of " + quote(key));
  if (elem == ValueType::kBool) {
    for (uint64_t i = 0; i < count; ++i) {
      if (v.array_data[i] > 1) {
        cur.fail(ErrorCode::kInvalidFile, "bool array " + quote(key) + " element " + std::to_string(i) + " is " +
                                              std::to_string(v.array_data[i]) + " (must be 0 or 1)");
      }
    }
  }
  return v;
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kUint16: case ValueType::kInt16:
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kUint64: case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool is_unsigned_type(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 || t == ValueType::kUint64;
}

}  // namespace

const char* value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

size_t value_type_size(ValueType type) {
  switch (type) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUint16: case ValueType::kInt16: return 2;
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

const char* ggml_type_name(uint32_t raw_id) {
  constexpr size_t n = sizeof(kGgmlTypeNames) / sizeof(kGgmlTypeNames[0]);
  return raw_id < n ? kGgmlTypeNames[raw_id] : nullptr;
}

// ---------------------------------------------------------------- Value

bool Value::is_integer() const { return is_integer_type(type); }

int64_t Value::array_int(uint64_t index) const {
  if (type != ValueType::kArray || index >= array_size || array_data == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "array_int: index " + std::to_string(index) + " out of range (size " +
                                                 std::to_string(array_size) + ")");
  }
  if (!is_integer_type(array_type) && array_type != ValueType::kBool) {
    throw Error(ErrorCode::kInvalidFile, std::string("array_int: elements are ") + value_type_name(array_type) +
                                             ", not integers");
  }
  Value v;
  decode_scalar(array_type, array_data + index * value_type_size(array_type), v);
  if (array_type == ValueType::kUint64 && v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw Error(ErrorCode::kInvalidFile, "array element " + std::to_string(index) + " (" + std::to_string(v.u) +
                                             ") does not fit in int64");
  }
  return v.i;
}

double Value::array_float(uint64_t index) const {
  if (type != ValueType::kArray || index >= array_size || array_data == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "array_float: index " + std::to_string(index) + " out of range (size " +
                                                 std::to_string(array_size) + ")");
  }
  if (array_type == ValueType::kString) {
    throw Error(ErrorCode::kInvalidFile, "array_float: elements are strings, not numbers");
  }
  Value v;
  decode_scalar(array_type, array_data + index * value_type_size(array_type), v);
  return v.f;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (int d = 0; d < n_dims; ++d) {
    if (d) s += ", ";
    s += std::to_string(ne[d]);
  }
  return s + "]";
}

// ---------------------------------------------------------------- GgufFile

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path, const ReadOptions& options) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->map_ = MappedFile::map(path);
  f->parse(options);
  return f;
}

std::unique_ptr<GgufFile> GgufFile::from_bytes(const void* data, size_t size, const ReadOptions& options) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->map_ = MappedFile::from_bytes(data, size);
  f->parse(options);
  return f;
}

std::string GgufFile::where() const {
  return map_.path().empty() ? std::string("in-memory GGUF") : "GGUF file '" + map_.path() + "'";
}

void GgufFile::parse(const ReadOptions& options) {
  const std::string where_str = where();
  Cursor cur(map_.data(), map_.size(), where_str);

  if (map_.size() == 0) cur.fail(ErrorCode::kInvalidFile, "file is empty");
  if (map_.size() < 4 || std::memcmp(map_.data(), kMagic, 4) != 0) {
    std::string got;
    for (size_t i = 0; i < std::min<size_t>(4, map_.size()); ++i) got += std::to_string(map_.data()[i]) + (i < 3 ? " " : "");
    cur.fail(ErrorCode::kInvalidFile, "bad magic (expected 'GGUF' = 71 71 85 70, got " + got + "): not a GGUF file");
  }
  cur.take(4, "magic");
  version_ = cur.read<uint32_t>("header (version)");
  if (version_ < kMinVersion || version_ > kMaxVersion) {
    std::string msg = "GGUF version " + std::to_string(version_) + " is not supported (EdgeLLM reads versions 2 and 3)";
    if (version_ == 1) msg += "; re-convert the model with a current converter";
    // A big-endian file stores version 3 as 0x03000000.
    if (version_ >= 0x01000000u && (version_ & 0x00ffffffu) == 0) msg += "; this looks like a big-endian GGUF file";
    cur.fail(ErrorCode::kUnsupported, msg);
  }
  const uint64_t n_tensors = cur.read<uint64_t>("header (tensor count)");
  const uint64_t n_kv = cur.read<uint64_t>("header (metadata count)");
  if (n_kv > cur.remaining() / kMinKvBytes) {
    cur.fail(ErrorCode::kInvalidFile, "header claims " + std::to_string(n_kv) + " metadata entries but only " +
                                          std::to_string(cur.remaining()) + " bytes follow the header");
  }
  if (n_tensors > cur.remaining() / kMinTensorInfoBytes) {
    cur.fail(ErrorCode::kInvalidFile, "header claims " + std::to_string(n_tensors) + " tensors but only " +
                                          std::to_string(cur.remaining()) + " bytes follow the header");
  }

  // ---- metadata
  kv_.reserve(static_cast<size_t>(n_kv));
  kv_index_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string_view key = cur.read_string("key of metadata entry " + std::to_string(k));
    const uint32_t raw_type = cur.read<uint32_t>("value type of " + quote(key));
    if (!valid_value_type(raw_type)) {
      cur.fail(ErrorCode::kInvalidFile, "metadata " + quote(key) + " has unknown value type id " + std::to_string(raw_type));
    }
    Value value = read_value(cur, static_cast<ValueType>(raw_type), key);
    if (!kv_index_.emplace(key, kv_.size()).second) {
      cur.fail(ErrorCode::kInvalidFile, "duplicate metadata key " + quote(key));
    }
    kv_.push_back(KeyValue{key, std::move(value)});
  }

  alignment_ = kDefaultAlignment;
  if (const Value* a = find("general.alignment")) {
    if (!a->is_integer()) {
      cur.fail(ErrorCode::kInvalidFile, std::string("general.alignment has type ") + value_type_name(a->type) +
                                            " (must be an unsigned integer)");
    }
    const bool negative = !is_unsigned_type(a->type) && a->i < 0;
    if (negative || a->u == 0 || !is_power_of_two(a->u) || a->u > (uint64_t{1} << 30)) {
      cur.fail(ErrorCode::kInvalidFile, "general.alignment " + (negative ? std::to_string(a->i) : std::to_string(a->u)) +
                                            " is not a power of two between 1 and 2^30");
    }
    alignment_ = static_cast<uint32_t>(a->u);
  }

  // ---- tensor infos
  tensors_.reserve(static_cast<size_t>(n_tensors));
  tensor_index_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t t = 0; t < n_tensors; ++t) {
    TensorInfo ti;
    ti.name = cur.read_string("name of tensor " + std::to_string(t));
    const std::string tq = "tensor " + quote(ti.name);
    if (ti.name.empty()) cur.fail(ErrorCode::kInvalidFile, "tensor " + std::to_string(t) + " has an empty name");
    const uint32_t n_dims = cur.read<uint32_t>("dimension count of " + tq);
    if (n_dims == 0 || n_dims > static_cast<uint32_t>(kMaxDims)) {
      cur.fail(ErrorCode::kInvalidFile, tq + " has " + std::to_string(n_dims) + " dimensions (must be 1.." +
                                            std::to_string(kMaxDims) + ")");
    }
    ti.n_dims = static_cast<int>(n_dims);
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = cur.read<uint64_t>("shape of " + tq);
      if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        cur.fail(ErrorCode::kInvalidFile, tq + " dimension " + std::to_string(d) + " is " +
                                              (ne == 0 ? std::string("0") : std::to_string(static_cast<int64_t>(ne))) +
                                              " (must be positive)");
      }
      ti.ne[d] = static_cast<int64_t>(ne);
      if (n_elements > std::numeric_limits<int64_t>::max() / ti.ne[d]) {
        cur.fail(ErrorCode::kInvalidFile, tq + " element count overflows int64 (dimension " + std::to_string(d) +
                                              " = " + std::to_string(ne) + ")");
      }
      n_elements *= ti.ne[d];
    }
    const uint32_t raw_type = cur.read<uint32_t>("type of " + tq);
    const TensorTypeTraits* traits = find_tensor_type(raw_type);
    // Weight types, and raw I8 bytes (pack files); not the activation formats or internal layouts.
    if (traits == nullptr || !traits->in_files || !(traits->is_weight_type || traits->type == TensorType::I8)) {
      const char* known = ggml_type_name(raw_type);
      cur.fail(ErrorCode::kUnsupported, tq + " has type id " + std::to_string(raw_type) +
                                            (known ? " (" + std::string(known) + ")" : std::string(" (not a ggml type)")) +
                                            ", which is not supported by EdgeLLM");
    }
    ti.type = traits->type;
    if (ti.ne[0] % traits->block_size != 0) {
      cur.fail(ErrorCode::kInvalidFile, tq + " of type " + traits->name + " has row length " + std::to_string(ti.ne[0]) +
                                            ", not a multiple of the block size " + std::to_string(traits->block_size));
    }
    // Bytes = (ne0 / block) * block_bytes * rows, each step overflow-checked.
    const uint64_t blocks_per_row = static_cast<uint64_t>(ti.ne[0] / traits->block_size);
    const uint64_t rows = static_cast<uint64_t>(n_elements / ti.ne[0]);
    const uint64_t kMax = std::numeric_limits<uint64_t>::max();
    if (blocks_per_row > kMax / traits->block_bytes || blocks_per_row * traits->block_bytes > kMax / rows) {
      cur.fail(ErrorCode::kInvalidFile, tq + " size in bytes overflows");
    }
    const uint64_t n_bytes = blocks_per_row * traits->block_bytes * rows;
    ti.offset = cur.read<uint64_t>("data offset of " + tq);
    if (ti.offset % alignment_ != 0) {
      cur.fail(ErrorCode::kInvalidFile, tq + " data offset " + std::to_string(ti.offset) +
                                            " is not a multiple of the alignment " + std::to_string(alignment_));
    }
    if (n_bytes > map_.size()) {
      cur.fail(ErrorCode::kInvalidFile, tq + " " + ti.shape_string() + " needs " + std::to_string(n_bytes) +
                                            " bytes, more than the whole file (" + std::to_string(map_.size()) + ")");
    }
    ti.n_bytes = static_cast<size_t>(n_bytes);
    if (!tensor_index_.emplace(ti.name, tensors_.size()).second) {
      cur.fail(ErrorCode::kInvalidFile, "duplicate tensor name " + quote(ti.name));
    }
    tensors_.push_back(ti);
  }

  // ---- data section
  const uint64_t info_end = cur.pos();
  const uint64_t pad = (alignment_ - info_end % alignment_) % alignment_;
  data_offset_ = static_cast<size_t>(info_end + pad);  // info_end <= size <= SIZE_MAX, pad < 2^30
  if (!tensors_.empty() && data_offset_ > map_.size()) {
    cur.fail(ErrorCode::kInvalidFile, "truncated: the tensor data section would start at offset " +
                                          std::to_string(data_offset_) + " but the file is " +
                                          std::to_string(map_.size()) + " bytes");
  }
  // Vocab-only files (no tensors) often end right after the metadata, without padding.
  if (tensors_.empty()) data_offset_ = std::min(data_offset_, map_.size());
  const uint64_t data_size = map_.size() - data_offset_;
  for (TensorInfo& ti : tensors_) {
    if (ti.offset > data_size || ti.n_bytes > data_size - ti.offset) {
      cur.fail(ErrorCode::kInvalidFile, "tensor " + quote(ti.name) + " " + ti.shape_string() + " data [" +
                                            std::to_string(ti.offset) + ", +" + std::to_string(ti.n_bytes) +
                                            ") lies outside the data section (" + std::to_string(data_size) +
                                            " bytes): file truncated?");
    }
    ti.data = map_.data() + data_offset_ + ti.offset;
  }

  if (options.reject_overlapping_tensors && tensors_.size() > 1) {
    std::vector<const TensorInfo*> order;
    order.reserve(tensors_.size());
    for (const TensorInfo& ti : tensors_) order.push_back(&ti);
    std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < order.size(); ++i) {
      const TensorInfo& prev = *order[i - 1];
      const TensorInfo& next = *order[i];
      if (prev.offset + prev.n_bytes > next.offset) {  // no overflow: both within data_size
        cur.fail(ErrorCode::kInvalidFile, "tensors " + quote(prev.name) + " (offset " + std::to_string(prev.offset) +
                                              ", " + std::to_string(prev.n_bytes) + " bytes) and " + quote(next.name) +
                                              " (offset " + std::to_string(next.offset) + ") overlap");
      }
    }
  }
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

size_t GgufFile::tensor_data_bytes() const {
  size_t total = 0;
  for (const TensorInfo& t : tensors_) total += t.n_bytes;  // each lies inside the file: no overflow
  return total;
}

namespace {
[[noreturn]] void wrong_type(const std::string& where, std::string_view key, const Value& v, const char* wanted) {
  throw Error(ErrorCode::kInvalidFile, where + ": metadata " + quote(key) + " has type " + value_type_name(v.type) +
                                           (v.type == ValueType::kArray ? std::string(" of ") + value_type_name(v.array_type) : std::string()) +
                                           ", expected " + wanted);
}
}  // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::kString) wrong_type(where(), key, *v, "string");
  return std::string(v->str);
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) wrong_type(where(), key, *v, "an integer");
  if (v->type == ValueType::kUint64 && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw Error(ErrorCode::kInvalidFile, where() + ": metadata " + quote(key) + " = " + std::to_string(v->u) +
                                             " does not fit in int64");
  }
  return v->i;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_float() && !v->is_integer()) wrong_type(where(), key, *v, "a number");
  return v->f;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::kBool) wrong_type(where(), key, *v, "bool");
  return v->u != 0;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::kArray || v->array_type == ValueType::kString || v->array_type == ValueType::kBool) {
    wrong_type(where(), key, *v, "a numeric array");
  }
  std::vector<float> out(static_cast<size_t>(v->array_size));
  if (v->array_type == ValueType::kFloat32) {
    // Fast path (tokenizer scores: 150k entries): the packed data is already f32 little-endian.
    if (!out.empty()) std::memcpy(out.data(), v->array_data, out.size() * sizeof(float));
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(v->array_float(i));
  }
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::kArray || (!is_integer_type(v->array_type) && v->array_type != ValueType::kBool)) {
    wrong_type(where(), key, *v, "an integer array");
  }
  std::vector<int64_t> out(static_cast<size_t>(v->array_size));
  for (size_t i = 0; i < out.size(); ++i) out[i] = v->array_int(i);
  return out;
}

std::optional<std::vector<std::string_view>> GgufFile::get_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::kArray || v->array_type != ValueType::kString)
    wrong_type(where(), key, *v, "a string array");
  return v->string_elements();
}

std::optional<uint64_t> GgufFile::get_string_array_size(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::kArray || v->array_type != ValueType::kString) wrong_type(where(), key, *v, "a string array");
  return v->array_size;
}

std::vector<std::string_view> Value::string_elements() const {
  if (type != ValueType::kArray || array_type != ValueType::kString) {
    throw Error(ErrorCode::kInvalidArgument, "string_elements: the value is not a string array");
  }
  std::vector<std::string_view> out;
  // Each element takes at least its 8-byte length: a count beyond that is caught below, not
  // allocated for.
  out.reserve(static_cast<size_t>(std::min<uint64_t>(array_size, array_bytes / sizeof(uint64_t))));
  size_t off = 0;
  for (uint64_t i = 0; i < array_size; ++i) {
    // Checked at open; checked again so a Value assembled elsewhere cannot read out of bounds.
    uint64_t len = 0;
    if (array_bytes - off < sizeof(len)) throw Error(ErrorCode::kInvalidFile, "string_elements: array is truncated");
    std::memcpy(&len, array_data + off, sizeof(len));
    off += sizeof(len);
    if (len > array_bytes - off) throw Error(ErrorCode::kInvalidFile, "string_elements: array is truncated");
    out.emplace_back(reinterpret_cast<const char*>(array_data + off), static_cast<size_t>(len));
    off += static_cast<size_t>(len);
  }
  return out;
}

}  // namespace edgellm::gguf
