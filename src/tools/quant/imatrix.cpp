#include "tools/quant/imatrix.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace edgellm::quant {
namespace {

constexpr const char* kInSum2Suffix = ".in_sum2";
constexpr const char* kCountsSuffix = ".counts";
// Counts are floats in the GGUF layout; beyond 2^53 they stop being integers anyway, and a
// count that large (9e15 tokens) is not a calibration run but a corrupt file.
constexpr double kMaxCount = 9007199254740992.0;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kInvalidFile, "imatrix '" + path + "': " + what);
}

void check_sums(const std::string& path, const std::string& name, const std::vector<float>& sums) {
  for (size_t i = 0; i < sums.size(); ++i) {
    if (!std::isfinite(sums[i]) || sums[i] < 0) {
      bad(path, "entry '" + name + "' value " + std::to_string(i) + " is " + std::to_string(sums[i]) +
                    " (sums of squares are finite and >= 0)");
    }
  }
}

std::vector<float> read_f32_tensor(const std::string& path, const gguf::TensorInfo& t) {
  if (t.type != TensorType::F32) {
    bad(path, "tensor '" + std::string(t.name) + "' has type " + tensor_type_name(t.type) + ", expected f32");
  }
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

Imatrix read_gguf(const std::string& path) {
  const std::unique_ptr<gguf::GgufFile> f = gguf::GgufFile::open(path);
  Imatrix m;
  if (auto d = f->get_string_array("imatrix.datasets")) {
    for (std::string_view s : *d) m.datasets.emplace_back(s);
  }
  const auto u32 = [&](const char* key) -> int32_t {
    const auto v = f->get_int(key);
    if (!v) return 0;
    if (*v < 0 || *v > std::numeric_limits<int32_t>::max())
      bad(path, std::string(key) + " = " + std::to_string(*v) + " is out of range");
    return static_cast<int32_t>(*v);
  };
  m.chunk_count = u32("imatrix.chunk_count");
  m.chunk_size = u32("imatrix.chunk_size");

  // Pair NAME.in_sum2 with NAME.counts; other tensors are ignored, as llama.cpp's loader does.
  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pairs;
  for (const gguf::TensorInfo& t : f->tensors()) {
    std::string name(t.name);
    if (name.ends_with(kInSum2Suffix)) {
      pairs[name.substr(0, name.size() - std::strlen(kInSum2Suffix))].first = &t;
    } else if (name.ends_with(kCountsSuffix)) {
      pairs[name.substr(0, name.size() - std::strlen(kCountsSuffix))].second = &t;
    }
  }
  if (pairs.empty()) bad(path, "no NAME.in_sum2 / NAME.counts tensors: not an importance matrix");
  for (const auto& [name, p] : pairs) {
    if (p.first == nullptr || p.second == nullptr) {
      bad(path, "entry '" + name + "' has " + (p.first ? "in_sum2 but no counts" : "counts but no in_sum2"));
    }
    ImatrixEntry e;
    e.sums = read_f32_tensor(path, *p.first);
    const std::vector<float> counts = read_f32_tensor(path, *p.second);
    if (counts.empty() || e.sums.empty() || e.sums.size() % counts.size() != 0) {
      bad(path, "entry '" + name + "': " + std::to_string(e.sums.size()) + " sums do not divide into " +
                    std::to_string(counts.size()) + " matrices");
    }
    check_sums(path, name, e.sums);
    for (float c : counts) {
      if (!std::isfinite(c) || c < 0 || c > kMaxCount || c != std::floor(c)) {
        bad(path, "entry '" + name + "' has count " + std::to_string(c) + " (whole token counts expected)");
      }
      e.counts.push_back(static_cast<int64_t>(c));
    }
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

// Sequential reader over the bytes of a legacy file; every read is bounds-checked.
class ByteReader {
 public:
  ByteReader(const std::string& path, std::string bytes) : path_(path), bytes_(std::move(bytes)) {}
  size_t left() const { return bytes_.size() - pos_; }
  int32_t i32(const std::string& what) {
    int32_t v;
    take(&v, sizeof v, what);
    return v;
  }
  void take(void* out, size_t n, const std::string& what) {
    if (n > left())
      bad(path_, "truncated: " + what + " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) + " left");
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
  }

 private:
  std::string path_;
  std::string bytes_;
  size_t pos_ = 0;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open imatrix '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorCode::kIo, "cannot read imatrix '" + path + "'");
  return bytes;
}

Imatrix read_legacy(const std::string& path, std::string bytes) {
  ByteReader r(path, std::move(bytes));
  Imatrix m;
  m.legacy = true;
  const int32_t n_entries = r.i32("the entry count");
  // Each entry takes at least 16 bytes: a count beyond that is corrupt, not a reason to loop.
  if (n_entries < 1 || static_cast<size_t>(n_entries) > r.left() / 16) {
    bad(path, "entry count " + std::to_string(n_entries) + " is impossible for a file of this size (not an imatrix?)");
  }
  for (int32_t i = 0; i < n_entries; ++i) {
    const std::string at = "entry " + std::to_string(i + 1);
    const int32_t len = r.i32(at + " name length");
    if (len < 1 || static_cast<size_t>(len) > r.left()) bad(path, at + " has name length " + std::to_string(len));
    std::string name(static_cast<size_t>(len), '\0');
    r.take(name.data(), name.size(), at + " name");
    const int32_t ncall = r.i32(at + " ncall");
    const int32_t nval = r.i32(at + " value count");
    if (ncall < 0) bad(path, "entry '" + name + "' has ncall " + std::to_string(ncall));
    if (nval < 1 || static_cast<size_t>(nval) > r.left() / sizeof(float)) {
      bad(path,
          "entry '" + name + "' has " + std::to_string(nval) + " values, " + std::to_string(r.left()) + " bytes left");
    }
    ImatrixEntry e;
    e.sums.resize(static_cast<size_t>(nval));
    r.take(e.sums.data(), e.sums.size() * sizeof(float), "entry '" + name + "' values");
    check_sums(path, name, e.sums);
    e.counts = {ncall};
    if (!m.entries.emplace(name, std::move(e)).second) bad(path, "entry '" + name + "' appears twice");
  }
  // Optional trailer: the chunk count and the dataset name.
  if (r.left() >= sizeof(int32_t)) {
    const int32_t chunks = r.i32("the chunk count");
    if (chunks < 0) bad(path, "chunk count " + std::to_string(chunks));
    m.chunk_count = chunks;
    if (r.left() >= sizeof(int32_t)) {
      const int32_t len = r.i32("the dataset name length");
      if (len < 0 || static_cast<size_t>(len) > r.left()) bad(path, "dataset name length " + std::to_string(len));
      std::string dataset(static_cast<size_t>(len), '\0');
      r.take(dataset.data(), dataset.size(), "the dataset name");
      if (!dataset.empty()) m.datasets.push_back(std::move(dataset));
    }
  }
  if (r.left() != 0) bad(path, std::to_string(r.left()) + " unexpected bytes after the last entry");
  return m;
}

}  // namespace

std::optional<std::vector<float>> Imatrix::importance(const std::string& name) const {
  const auto it = entries.find(name);
  if (it == entries.end()) return std::nullopt;
  const ImatrixEntry& e = it->second;
  const size_t n_in = static_cast<size_t>(e.n_in());
  std::vector<float> w(e.sums.size());
  for (size_t j = 0; j < e.counts.size(); ++j) {
    const float count = static_cast<float>(e.counts[j]);
    for (size_t i = 0; i < n_in; ++i) {
      const float s = e.sums[j * n_in + i];
      // llama-quantize: legacy values / ncall (as stored when ncall is 0); GGUF sums / count, 1s
      // for a matrix that counted nothing.
      w[j * n_in + i] = legacy ? (count > 0 ? s / count : s) : (count > 0 ? s / count : 1.0f);
    }
  }
  return w;
}

Imatrix read_imatrix(const std::string& path) {
  std::string bytes = read_all(path);
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) return read_gguf(path);
  return read_legacy(path, std::move(bytes));
}

void write_imatrix(const Imatrix& m, const std::string& path) {
  gguf::GgufWriter w;
  w.set_string("general.type", "imatrix");
  w.set_array_string("imatrix.datasets", m.datasets);
  w.set_u32("imatrix.chunk_count", static_cast<uint32_t>(std::max(0, m.chunk_count)));
  w.set_u32("imatrix.chunk_size", static_cast<uint32_t>(std::max(0, m.chunk_size)));
  std::vector<std::vector<float>> counts(m.entries.size());
  size_t i = 0;
  for (const auto& [name, e] : m.entries) {
    require(!e.counts.empty() && !e.sums.empty() && e.sums.size() % e.counts.size() == 0, ErrorCode::kInvalidArgument,
            "write_imatrix: entry '" + name + "' has " + std::to_string(e.sums.size()) + " sums for " +
                std::to_string(e.counts.size()) + " matrices");
    for (int64_t c : e.counts) counts[i].push_back(static_cast<float>(c));
    // ggml drops trailing dimensions of 1 when it writes a tensor: [n_in] and [1] for one matrix.
    std::vector<int64_t> ne_sums = {e.n_in()}, ne_counts = {1};
    if (e.n_mat() > 1) {
      ne_sums.push_back(e.n_mat());
      ne_counts.push_back(e.n_mat());
    }
    w.add_tensor(name + kInSum2Suffix, TensorType::F32, ne_sums, e.sums.data(), e.sums.size() * sizeof(float),
                 gguf::GgufWriter::Ownership::kBorrow);
    w.add_tensor(name + kCountsSuffix, TensorType::F32, ne_counts, counts[i].data(), counts[i].size() * sizeof(float),
                 gguf::GgufWriter::Ownership::kBorrow);
    ++i;
  }
  w.write(path);
}

}  // namespace edgellm::quant
