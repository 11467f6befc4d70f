#include "gguf/gguf_writer.h"


#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"

namespace edgellm::gguf {

static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes a little-endian host");

class GgufWriter::Output {
 public:
  virtual ~Output() = default;
  virtual void write(const void* data, size_t bytes) = 0;
  void zeros(size_t n) {
    static const uint8_t kZeros[256] = {};
    while (n > 0) {
      const size_t k = std::min(n, sizeof(kZeros));
      write(kZeros, k);
      n -= k;
    }
  }
};

namespace {

constexpr uint32_t kVersion = 3;
// Buffered file output: large sequential writes, flushed before fsync.
constexpr size_t kFileBufferBytes = size_t{1} << 20;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

template <typename T>
void append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void append_string(std::vector<uint8_t>& out, std::string_view s) {
  append<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

template <typename T>
std::vector<uint8_t> scalar_payload(T v) {
  std::vector<uint8_t> p;
  append<T>(p, v);
  return p;
}

std::vector<uint8_t> array_payload(ValueType elem, const void* data, uint64_t count, size_t elem_size) {
  std::vector<uint8_t> p;
  append<uint32_t>(p, static_cast<uint32_t>(elem));
  append<uint64_t>(p, count);
  // resize + memcpy rather than insert(): g++ 12 -O3 reports a bogus -Warray-bounds on the latter.
  const size_t n = static_cast<size_t>(count * elem_size);
  p.resize(12 + n);
  if (n > 0) std::memcpy(p.data() + 12, data, n);
  return p;
}

template <typename Strings>
std::vector<uint8_t> string_array_payload(const Strings& v) {
  std::vector<uint8_t> p;
  append<uint32_t>(p, static_cast<uint32_t>(ValueType::kString));
  append<uint64_t>(p, v.size());
  for (const auto& s : v) append_string(p, s);
  return p;
}

class BytesOutput final : public GgufWriter::Output {
 public:
  explicit BytesOutput(std::vector<uint8_t>& out) : out_(out) {}
  void write(const void* data, size_t bytes) override {
    const auto* b = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), b, b + bytes);
  }

 private:
  std::vector<uint8_t>& out_;
};

class FileOutput final : public GgufWriter::Output {
 public:
  FileOutput(int fd, const std::string& path) : fd_(fd), path_(path) { buf_.reserve(kFileBufferBytes); }
  void write(const void* data, size_t bytes) override {
    const auto* b = static_cast<const uint8_t*>(data);
    if (bytes >= kFileBufferBytes) {
      flush();
      raw_write(b, bytes);
      return;
    }
    if (buf_.size() + bytes > kFileBufferBytes) flush();
    buf_.insert(buf_.end(), b, b + bytes);
  }
  void flush() {
    if (!buf_.empty()) raw_write(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  void raw_write(const uint8_t* p, size_t n) { write_all(fd_, p, n, path_); }

  int fd_;
  const std::string& path_;
  std::vector<uint8_t> buf_;
};

// Counts what a streaming callback writes so a short or long tensor is caught at once.
class CountingSink final : public TensorSink {
 public:
  CountingSink(GgufWriter::Output& out, const WriterTensor& t) : out_(out), t_(t) {}
  void write(const void* data, size_t bytes) override {
    if (bytes > t_.n_bytes - written_) {
      throw Error(ErrorCode::kInvalidArgument, "tensor '" + t_.name + "': data callback wrote more than its " +
                                                   std::to_string(t_.n_bytes) + " bytes");
    }
    out_.write(data, bytes);
    written_ += bytes;
  }
  size_t written() const { return written_; }

 private:
  GgufWriter::Output& out_;
  const WriterTensor& t_;
  size_t written_ = 0;
};

void check_key(std::string_view key) {
  require(!key.empty(), ErrorCode::kInvalidArgument, "GGUF metadata key must not be empty");
}

}  // namespace

// ---------------------------------------------------------------- metadata

void GgufWriter::put(std::string_view key, ValueType type, std::vector<uint8_t> payload) {
  check_key(key);
  if (key == "general.alignment") {
    // Keep the layout alignment and the stored key in sync, whichever way it is set.
    require(type == ValueType::kUint32, ErrorCode::kInvalidArgument,
            std::string("general.alignment must be uint32, got ") + value_type_name(type));
    uint32_t a;
    std::memcpy(&a, payload.data(), sizeof(a));
    require(a != 0 && (a & (a - 1)) == 0 && a <= (uint32_t{1} << 30), ErrorCode::kInvalidArgument,
            "general.alignment " + std::to_string(a) + " is not a power of two between 1 and 2^30");
    alignment_ = a;
  }
  const std::string k(key);
  auto it = index_.find(k);
  if (it != index_.end()) {
    kv_[it->second].type = type;
    kv_[it->second].payload = std::move(payload);
    return;
  }
  index_.emplace(k, kv_.size());
  kv_.push_back(Entry{k, type, std::move(payload)});
}

void GgufWriter::set_u8(std::string_view key, uint8_t v) { put(key, ValueType::kUint8, scalar_payload(v)); }
void GgufWriter::set_i8(std::string_view key, int8_t v) { put(key, ValueType::kInt8, scalar_payload(v)); }
void GgufWriter::set_u16(std::string_view key, uint16_t v) { put(key, ValueType::kUint16, scalar_payload(v)); }
void GgufWriter::set_i16(std::string_view key, int16_t v) { put(key, ValueType::kInt16, scalar_payload(v)); }
void GgufWriter::set_u32(std::string_view key, uint32_t v) { put(key, ValueType::kUint32, scalar_payload(v)); }
void GgufWriter::set_i32(std::string_view key, int32_t v) { put(key, ValueType::kInt32, scalar_payload(v)); }
void GgufWriter::set_u64(std::string_view key, uint64_t v) { put(key, ValueType::kUint64, scalar_payload(v)); }
void GgufWriter::set_i64(std::string_view key, int64_t v) { put(key, ValueType::kInt64, scalar_payload(v)); }
void GgufWriter::set_f32(std::string_view key, float v) { put(key, ValueType::kFloat32, scalar_payload(v)); }
void GgufWriter::set_f64(std::string_view key, double v) { put(key, ValueType::kFloat64, scalar_payload(v)); }
void GgufWriter::set_bool(std::string_view key, bool v) {
  put(key, ValueType::kBool, scalar_payload<uint8_t>(v ? 1 : 0));
}
void GgufWriter::set_string(std::string_view key, std::string_view v) {
  std::vector<uint8_t> p;
  append_string(p, v);
  put(key, ValueType::kString, std::move(p));
}

#define EDGELLM_GGUF_ARRAY_SETTER(fn, T, VT) \
  void GgufWriter::fn(std::string_view key, const std::vector<T>& v) { \
    put(key, ValueType::kArray, array_payload(VT, v.data(), v.size(), sizeof(T))); \
  }
EDGELLM_GGUF_ARRAY_SETTER(set_array_u8, uint8_t, ValueType::kUint8)
EDGELLM_GGUF_ARRAY_SETTER(set_array_i8, int8_t, ValueType::kInt8)
EDGELLM_GGUF_ARRAY_SETTER(set_array_u16, uint16_t, ValueType::kUint16)
EDGELLM_GGUF_ARRAY_SETTER(set_array_i16, int16_t, ValueType::kInt16)
EDGELLM_GGUF_ARRAY_SETTER(set_array_u32, uint32_t, ValueType::kUint32)
EDGELLM_GGUF_ARRAY_SETTER(set_array_i32, int32_t, ValueType::kInt32)
EDGELLM_GGUF_ARRAY_SETTER(set_array_u64, uint64_t, ValueType::kUint64)
EDGELLM_GGUF_ARRAY_SETTER(set_array_i64, int64_t, ValueType::kInt64)
EDGELLM_GGUF_ARRAY_SETTER(set_array_f32, float, ValueType::kFloat32)
EDGELLM_GGUF_ARRAY_SETTER(set_array_f64, double, ValueType::kFloat64)
#undef EDGELLM_GGUF_ARRAY_SETTER

void GgufWriter::set_array_bool(std::string_view key, const std::vector<bool>& v) {
  // std::vector<bool> is bit-packed: expand to one byte per element as GGUF stores bools.
  std::vector<uint8_t> bytes(v.size());
  for (size_t i = 0; i < v.size(); ++i) bytes[i] = v[i] ? 1 : 0;
  put(key, ValueType::kArray, array_payload(ValueType::kBool, bytes.data(), bytes.size(), 1));
}

void GgufWriter::set_array_string(std::string_view key, const std::vector<std::string>& v) {
  put(key, ValueType::kArray, string_array_payload(v));
}

void GgufWriter::set_array_string(std::string_view key, const std::vector<std::string_view>& v) {
  put(key, ValueType::kArray, string_array_payload(v));
}

void GgufWriter::set_value(std::string_view key, const Value& v) {
  switch (v.type) {
    case ValueType::kUint8: set_u8(key, static_cast<uint8_t>(v.u)); return;
    case ValueType::kInt8: set_i8(key, static_cast<int8_t>(v.i)); return;
    case ValueType::kUint16: set_u16(key, static_cast<uint16_t>(v.u)); return;
    case ValueType::kInt16: set_i16(key, static_cast<int16_t>(v.i)); return;
    case ValueType::kUint32: set_u32(key, static_cast<uint32_t>(v.u)); return;
    case ValueType::kInt32: set_i32(key, static_cast<int32_t>(v.i)); return;
    case ValueType::kUint64: set_u64(key, v.u); return;
    case ValueType::kInt64: set_i64(key, v.i); return;
    case ValueType::kFloat32: set_f32(key, static_cast<float>(v.f)); return;
    case ValueType::kFloat64: set_f64(key, v.f); return;
    case ValueType::kBool: set_bool(key, v.u != 0); return;
    case ValueType::kString: set_string(key, v.str); return;
    case ValueType::kArray:
      if (v.array_type == ValueType::kString) {
        set_array_string(key, v.string_elements());
        return;
      }
      require(v.array_type != ValueType::kArray && value_type_size(v.array_type) != 0, ErrorCode::kInvalidArgument,
              "metadata '" + std::string(key) + "': nested arrays cannot be written");
      require(v.array_size == 0 || v.array_data != nullptr, ErrorCode::kInvalidArgument,
              "metadata '" + std::string(key) + "': array has no data");
      put(key, ValueType::kArray,
          array_payload(v.array_type, v.array_data, v.array_size, value_type_size(v.array_type)));
      return;
  }
  throw Error(ErrorCode::kInvalidArgument, "metadata '" + std::string(key) + "': unknown value type " +
                                               std::to_string(static_cast<uint32_t>(v.type)));
}

void GgufWriter::copy_metadata_from(const GgufFile& src, const SkipKeyFn& skip) {
  for (const KeyValue& kv : src.metadata()) {
    if (skip && skip(kv.key)) continue;
    set_value(kv.key, kv.value);
  }
}

bool GgufWriter::remove(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  kv_.erase(kv_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < kv_.size(); ++i) index_.emplace(kv_[i].key, i);
  if (key == "general.alignment") alignment_ = kDefaultAlignment;
  return true;
}

std::vector<std::string> GgufWriter::keys() const {
  std::vector<std::string> out;
  out.reserve(kv_.size());
  for (const Entry& e : kv_) out.push_back(e.key);
  return out;
}

void GgufWriter::set_alignment(uint32_t alignment) { set_u32("general.alignment", alignment); }

// ---------------------------------------------------------------- tensors

WriterTensor& GgufWriter::new_tensor(std::string_view name, TensorType type, const std::vector<int64_t>& ne) {
  const std::string n(name);
  require(!n.empty(), ErrorCode::kInvalidArgument, "tensor name must not be empty");
  require(tensor_index_.count(n) == 0, ErrorCode::kInvalidArgument, "duplicate tensor name '" + n + "'");
  require(!ne.empty() && ne.size() <= static_cast<size_t>(kMaxDims), ErrorCode::kInvalidArgument,
          "tensor '" + n + "' has " + std::to_string(ne.size()) + " dimensions (must be 1.." + std::to_string(kMaxDims) + ")");
  const TensorTypeTraits* traits = find_tensor_type(static_cast<uint32_t>(type));
  require(traits != nullptr && traits->in_files, ErrorCode::kInvalidArgument,
          "tensor '" + n + "' has a type that GGUF files cannot hold");
  WriterTensor t;
  t.name = n;
  t.type = type;
  t.n_dims = static_cast<int>(ne.size());
  int64_t elements = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    require(ne[d] > 0, ErrorCode::kInvalidArgument,
            "tensor '" + n + "' dimension " + std::to_string(d) + " is " + std::to_string(ne[d]) + " (must be positive)");
    require(elements <= std::numeric_limits<int64_t>::max() / ne[d], ErrorCode::kInvalidArgument,
            "tensor '" + n + "' element count overflows");
    elements *= ne[d];
    t.ne[d] = ne[d];
  }
  require(t.ne[0] % traits->block_size == 0, ErrorCode::kInvalidArgument,
          "tensor '" + n + "' of type " + traits->name + " has row length " + std::to_string(t.ne[0]) +
              ", not a multiple of the block size " + std::to_string(traits->block_size));
  const uint64_t row = static_cast<uint64_t>(t.ne[0] / traits->block_size) * traits->block_bytes;
  const uint64_t rows = static_cast<uint64_t>(elements / t.ne[0]);
  require(row <= std::numeric_limits<size_t>::max() / rows, ErrorCode::kInvalidArgument,
          "tensor '" + n + "' size in bytes overflows");
  t.n_bytes = static_cast<size_t>(row * rows);
  tensor_index_.emplace(n, tensors_.size());
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, const std::vector<int64_t>& ne, const void* data,
                            size_t bytes, Ownership ownership) {
  // Validate before registering so a bad call leaves the writer unchanged.
  WriterTensor& t = new_tensor(name, type, ne);
  if (bytes != t.n_bytes || (bytes > 0 && data == nullptr)) {
    const std::string msg = "tensor '" + t.name + "' " + std::string(tensor_type_name(type)) + " needs " +
                            std::to_string(t.n_bytes) + " bytes of data, got " + std::to_string(bytes);
    tensor_index_.erase(t.name);
    tensors_.pop_back();
    throw Error(ErrorCode::kInvalidArgument, msg);
  }
  if (ownership == Ownership::kCopy) {
    const auto* b = static_cast<const uint8_t*>(data);
    t.owned.assign(b, b + bytes);
    t.data = t.owned.data();
  } else {
    t.data = static_cast<const uint8_t*>(data);
  }
}

void GgufWriter::add_tensor_info(std::string_view name, TensorType type, const std::vector<int64_t>& ne) {
  new_tensor(name, type, ne);
}

// ---------------------------------------------------------------- output

uint64_t GgufWriter::header_size() const {
  uint64_t n = 4 + 4 + 8 + 8;
  for (const Entry& e : kv_) n += 8 + e.key.size() + 4 + e.payload.size();
  for (const WriterTensor& t : tensors_) n += 8 + t.name.size() + 4 + 8 * static_cast<uint64_t>(t.n_dims) + 4 + 8;
  return n;
}

void GgufWriter::layout() {
  uint64_t offset = 0;
  for (WriterTensor& t : tensors_) {
    t.offset = offset;
    offset = align_up(offset + t.n_bytes, alignment_);
  }
}

uint64_t GgufWriter::file_size() const {
  uint64_t n = align_up(header_size(), alignment_);
  for (const WriterTensor& t : tensors_) n += align_up(t.n_bytes, alignment_);
  return n;
}

void GgufWriter::emit(Output& out, const TensorDataFn& fill) {
  for (const WriterTensor& t : tensors_) {
    require(t.data != nullptr || t.n_bytes == 0 || static_cast<bool>(fill), ErrorCode::kInvalidArgument,
            "tensor '" + t.name + "' has no data and no data callback was given to write()");
  }
  layout();
  std::vector<uint8_t> h;
  h.reserve(static_cast<size_t>(std::min<uint64_t>(header_size(), uint64_t{1} << 28)));
  h.insert(h.end(), {'G', 'G', 'U', 'F'});
  append<uint32_t>(h, kVersion);
  append<uint64_t>(h, tensors_.size());
  append<uint64_t>(h, kv_.size());
  for (const Entry& e : kv_) {
    append_string(h, e.key);
    append<uint32_t>(h, static_cast<uint32_t>(e.type));
    h.insert(h.end(), e.payload.begin(), e.payload.end());
  }
  for (const WriterTensor& t : tensors_) {
    append_string(h, t.name);
    append<uint32_t>(h, static_cast<uint32_t>(t.n_dims));
    for (int d = 0; d < t.n_dims; ++d) append<uint64_t>(h, static_cast<uint64_t>(t.ne[d]));
    append<uint32_t>(h, static_cast<uint32_t>(t.type));
    append<uint64_t>(h, t.offset);
  }
  out.write(h.data(), h.size());
  out.zeros(static_cast<size_t>(align_up(h.size(), alignment_) - h.size()));
  h = {};

  for (size_t i = 0; i < tensors_.size(); ++i) {
    const WriterTensor& t = tensors_[i];
    if (t.data != nullptr) {
      out.write(t.data, t.n_bytes);
    } else if (t.n_bytes > 0) {
      CountingSink sink(out, t);
      fill(i, t, sink);
      require(sink.written() == t.n_bytes, ErrorCode::kInvalidArgument,
              "tensor '" + t.name + "': data callback wrote " + std::to_string(sink.written()) + " of " +
                  std::to_string(t.n_bytes) + " bytes");
    }
    out.zeros(static_cast<size_t>(align_up(t.n_bytes, alignment_) - t.n_bytes));
  }
}

std::vector<uint8_t> GgufWriter::write_to_bytes(const TensorDataFn& fill) {
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(file_size()));
  BytesOutput out(bytes);
  emit(out, fill);
  return bytes;
}

void GgufWriter::write(const std::string& path, const TensorDataFn& fill) {
  write_file_atomically(path, [&](int fd, const std::string& tmp) {
    FileOutput out(fd, tmp);
    emit(out, fill);
    out.flush();
  });
}

}  // namespace edgellm::gguf
