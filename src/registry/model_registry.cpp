#include "registry/model_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf_reader.h"
#include "registry/crash_loop_guard.h"
#include "core/atomic_file.h"

namespace edgellm {

// An exclusive flock on root/.lock for the duration of one mutating call.
class ModelRegistry::Lock {
 public:
  explicit Lock(const std::string& root) {
    const std::string path = root + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(ErrorCode::kIo, "cannot open '" + path + "': " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      throw Error(ErrorCode::kIo, "cannot lock '" + path + "': " + std::strerror(err));
    }
  }
  ~Lock() { ::close(fd_); }  // closing releases the lock
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  int fd_ = -1;
};

namespace {

// Orders versions naturally: "10" after "9", "1.10" after "1.9".
bool version_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      const std::string ta = na.substr(std::min(na.find_first_not_of('0'), na.size()));
      const std::string tb = nb.substr(std::min(nb.find_first_not_of('0'), nb.size()));
      if (ta.size() != tb.size()) return ta.size() < tb.size();
      if (ta != tb) return ta < tb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

void check_identifiers(const ModelManifest& m) {
  require(is_registry_identifier(m.name), ErrorCode::kInvalidArgument,
          "model name must be 1-64 characters of [A-Za-z0-9._-], not starting with '.'");
  require(is_registry_identifier(m.version), ErrorCode::kInvalidArgument,
          "model version must be 1-64 characters of [A-Za-z0-9._-], not starting with '.'");
}

std::string lower_hex(std::string s) {
  for (auto& c : s) c = static_cast<char>((c >= 'A' && c <= 'F') ? c - 'A' + 'a' : c);
  return s;
}

struct FileState {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
};

bool stat_file(const std::string& path, FileState* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  out->size = static_cast<uint64_t>(st.st_size);
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  out->inode = static_cast<uint64_t>(st.st_ino);
  return true;
}

}  // namespace

std::string dominant_weight_type(const std::string& gguf_path) {
  auto file = gguf::GgufFile::open(gguf_path);
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : file->tensors()) {
    if (t.n_dims >= 2) bytes[tensor_type_name(t.type)] += t.n_bytes;
  }
  std::string best;
  uint64_t most = 0;
  for (const auto& [name, n] : bytes) {
    if (n > most) {
      most = n;
      best = name;
    }
  }
  return best;
}

Json registry_listing_json(const ModelRegistry& registry, const CrashLoopGuard& guard) {
  Json out = Json::object();
  Json models = Json::array();
  for (const auto& m : registry.list()) {
    Json j = m.to_json();
    const auto cur = registry.current(m.name);
    j.set("current", cur && cur->version == m.version);
    j.set("path", registry.model_path(m));
    models.push_back(j);
  }
  out.set("models", models);
  Json unfit = Json::array();
  for (const auto& k : guard.unfit_keys()) unfit.push_back(Json(k));
  out.set("unfit", unfit);
  return out;
}

ModelRegistry::ModelRegistry(std::string root) : root_(std::move(root)) {
  require(!root_.empty(), ErrorCode::kInvalidArgument, "registry root is empty");
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  for (const char* sub : {"manifests", "models", "current", "verified", "tmp", "guard"}) make_dirs(root_ + "/" + sub);
}

std::vector<ModelManifest> ModelRegistry::list() const {
  std::vector<ModelManifest> out;
  const std::string dir = root_ + "/manifests";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    try {
      out.push_back(ModelManifest::from_json(Json::parse(read_small_file(dir + "/" + name))));
    } catch (const Error& err) {
      log_message(LogLevel::kWarn, "registry: skipping manifest '" + name + "': " + err.what());
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const ModelManifest& a, const ModelManifest& b) {
    if (a.name != b.name) return a.name < b.name;
    return version_less(a.version, b.version);
  });
  return out;
}

std::optional<ModelManifest> ModelRegistry::get(const std::string& name, const std::string& version) const {
  if (!is_registry_identifier(name) || !is_registry_identifier(version)) return std::nullopt;
  const std::string path = root_ + "/manifests/" + name + "@" + version + ".json";
  if (!path_exists(path)) return std::nullopt;
  ModelManifest m = ModelManifest::from_json(Json::parse(read_small_file(path)));
  if (m.name != name || m.version != version) {
    throw Error(ErrorCode::kInvalidFile, "manifest '" + path + "' names " + m.key());
  }
  return m;
}

std::optional<ModelManifest> ModelRegistry::current(const std::string& name) const {
  if (!is_registry_identifier(name)) return std::nullopt;
  const std::string path = root_ + "/current/" + name + ".json";
  if (!path_exists(path)) return std::nullopt;
  const Json j = Json::parse(read_small_file(path));
  const Json* v = j.find("version");
  if (!v || !v->is_string()) throw Error(ErrorCode::kInvalidFile, "'" + path + "' has no version");
  return get(name, v->as_string());
}

std::optional<ModelManifest> ModelRegistry::resolve(const std::string& name_or_key) const {
  const size_t at = name_or_key.find('@');
  if (at == std::string::npos) return current(name_or_key);
  return get(name_or_key.substr(0, at), name_or_key.substr(at + 1));
}

ModelManifest ModelRegistry::install_file(const std::string& src, ModelManifest m, const InstallOptions& options) {
  check_identifiers(m);
  Lock lock(root_);
  const std::string part = tmp_dir() + "/" + m.key() + ".install.part";
  const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw Error(ErrorCode::kIo, "cannot open '" + src + "': " + std::strerror(errno));
  struct stat st {};
  ::fstat(in, &st);
  const uint64_t total = static_cast<uint64_t>(st.st_size);
  const int out = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    const int err = errno;
    ::close(in);
    throw Error(ErrorCode::kIo, "cannot create '" + part + "': " + std::strerror(err));
  }
  // One pass: read, hash, write. Any failure removes the partial copy.
  auto fail = [&](ErrorCode code, const std::string& msg) {
    ::close(in);
    ::close(out);
    ::unlink(part.c_str());
    throw Error(code, msg);
  };
  std::vector<char> buf(size_t{1} << 20);
  Sha256 hash;
  uint64_t done = 0;
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(ErrorCode::kIo, "cannot read '" + src + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    hash.update(buf.data(), static_cast<size_t>(n));
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = ::write(out, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(ErrorCode::kIo, "cannot write '" + part + "': " + std::strerror(errno));
      }
      off += w;
    }
    done += static_cast<uint64_t>(n);
    if (options.progress && !options.progress(done, total)) fail(ErrorCode::kCancelled, "install cancelled");
  }
  if (::fsync(out) != 0) fail(ErrorCode::kIo, "fsync of '" + part + "': " + std::strerror(errno));
  ::close(in);
  if (::close(out) != 0) {
    ::unlink(part.c_str());
    throw Error(ErrorCode::kIo, "cannot close '" + part + "': " + std::strerror(errno));
  }
  return finish_install(part, Sha256::hex(hash.finish()), done, std::move(m), options);
}

ModelManifest ModelRegistry::install_moved(const std::string& tmp_path, ModelManifest m,
                                           const InstallOptions& options) {
  check_identifiers(m);
  Lock lock(root_);
  std::string digest;
  try {
    digest = sha256_file_hex(tmp_path, options.progress);
  } catch (...) {
    remove_file(tmp_path);
    throw;
  }
  const int64_t size = file_size_or_minus_one(tmp_path);
  return finish_install(tmp_path, digest, static_cast<uint64_t>(std::max<int64_t>(size, 0)), std::move(m), options);
}

ModelManifest ModelRegistry::finish_install(const std::string& part, const std::string& digest, uint64_t size,
                                            ModelManifest m, const InstallOptions& options) {
  auto discard = [&](ErrorCode code, const std::string& msg) {
    ::unlink(part.c_str());
    throw Error(code, msg);
  };
  const std::string want = lower_hex(options.expected_sha256);
  if (!want.empty() && want != digest) {
    discard(ErrorCode::kInvalidFile, "SHA-256 mismatch for " + m.key() + ": expected " + want + ", got " + digest +
                                         " (the file is corrupted or not the one published; nothing was installed)");
  }
  if (m.size_bytes != 0 && m.size_bytes != size) {
    discard(ErrorCode::kInvalidFile, "size mismatch for " + m.key() + ": expected " + std::to_string(m.size_bytes) +
                                         " bytes, got " + std::to_string(size));
  }
  try {
    m.weight_type = dominant_weight_type(part);
  } catch (const Error& e) {
    discard(ErrorCode::kInvalidFile, "'" + m.key() + "' is not a loadable GGUF file: " + e.what());
  }
  if (auto existing = get(m.name, m.version)) {
    if (existing->sha256 != digest) {
      discard(ErrorCode::kInvalidArgument,
              m.key() + " is installed already with other content; remove it first or use a new version");
    }
    ::unlink(part.c_str());  // the same file again: keep the installed one
    if (options.make_current) write_current(m.name, m.version);
    return *existing;
  }
  m.file = m.key() + ".gguf";
  m.size_bytes = size;
  m.sha256 = digest;
  const std::string dest = model_path(m);
  try {
    rename_durable(part, dest);
  } catch (const Error& e) {
    discard(ErrorCode::kIo, e.what());
  }
  try {
    write_file_atomic(root_ + "/manifests/" + m.key() + ".json", m.to_json().dump(2) + "\n");
    write_verified_stamp(m);
    if (options.make_current) write_current(m.name, m.version);
  } catch (...) {
    // Roll back so the version does not exist half-installed (the old pointer still serves).
    ::unlink((root_ + "/manifests/" + m.key() + ".json").c_str());
    ::unlink((root_ + "/verified/" + m.key() + ".json").c_str());
    ::unlink(dest.c_str());
    throw;
  }
  return m;
}

void ModelRegistry::write_current(const std::string& name, const std::string& version) {
  Json j = Json::object();
  j.set("version", version);
  write_file_atomic(root_ + "/current/" + name + ".json", j.dump() + "\n");
}

void ModelRegistry::write_verified_stamp(const ModelManifest& m) {
  FileState s;
  if (!stat_file(model_path(m), &s)) return;
  Json j = Json::object();
  j.set("size", s.size);
  j.set("mtime_ns", s.mtime_ns);
  j.set("inode", s.inode);
  j.set("sha256", m.sha256);
  write_file_atomic(root_ + "/verified/" + m.key() + ".json", j.dump() + "\n");
}

bool ModelRegistry::stamp_matches(const ModelManifest& m) const {
  const std::string path = root_ + "/verified/" + m.key() + ".json";
  FileState s;
  if (!path_exists(path) || !stat_file(model_path(m), &s)) return false;
  try {
    const Json j = Json::parse(read_small_file(path));
    return static_cast<uint64_t>(j.at("size").as_number()) == s.size && j.at("mtime_ns").as_int() == s.mtime_ns &&
           static_cast<uint64_t>(j.at("inode").as_number()) == s.inode && j.at("sha256").as_string() == m.sha256;
  } catch (const Error&) {
    return false;
  }
}

ModelRegistry::Verification ModelRegistry::verify(const ModelManifest& m, const HashProgress& progress) const {
  Verification v;
  v.expected = m.sha256;
  const std::string path = model_path(m);
  const int64_t size = file_size_or_minus_one(path);
  if (size < 0) {
    v.message = "file '" + path + "' is missing";
    return v;
  }
  v.size = static_cast<uint64_t>(size);
  try {
    v.actual = sha256_file_hex(path, progress);
  } catch (const Error& e) {
    v.message = e.what();
    return v;
  }
  if (v.size != m.size_bytes) {
    v.message = "size " + std::to_string(v.size) + " != manifest " + std::to_string(m.size_bytes);
  } else if (v.actual != m.sha256) {
    v.message = "SHA-256 " + v.actual + " != manifest " + m.sha256;
  } else {
    v.ok = true;
  }
  return v;
}

std::string ModelRegistry::path_for_load(const std::string& name_or_key, const HashProgress& progress) {
  const auto m = resolve(name_or_key);
  require(m.has_value(), ErrorCode::kInvalidArgument, [&] { return "model '" + name_or_key + "' is not installed"; });
  if (!stamp_matches(*m)) {
    const Verification v = verify(*m, progress);
    if (!v.ok) throw Error(ErrorCode::kInvalidFile, "model " + m->key() + " failed verification: " + v.message);
    Lock lock(root_);
    write_verified_stamp(*m);
  }
  return model_path(*m);
}

void ModelRegistry::set_current(const std::string& name, const std::string& version) {
  Lock lock(root_);
  require(get(name, version).has_value(), ErrorCode::kInvalidArgument,
          [&] { return "model '" + name + "@" + version + "' is not installed"; });
  write_current(name, version);
}

void ModelRegistry::remove(const std::string& name, const std::string& version) {
  Lock lock(root_);
  const auto m = get(name, version);
  require(m.has_value(), ErrorCode::kInvalidArgument,
          [&] { return "model '" + name + "@" + version + "' is not installed"; });
  const auto cur = current(name);
  if (cur && cur->version == version) {
    // Point at the highest remaining version first, so a crash in between never leaves the
    // pointer at a removed version.
    std::optional<std::string> next;
    for (const auto& other : list()) {
      if (other.name == name && other.version != version) next = other.version;
    }
    if (next) {
      write_current(name, *next);
    } else {
      remove_file(root_ + "/current/" + name + ".json");
      fsync_dir(root_ + "/current");
    }
  }
  remove_file(root_ + "/manifests/" + m->key() + ".json");
  remove_file(root_ + "/verified/" + m->key() + ".json");
  remove_file(model_path(*m));
  fsync_dir(root_ + "/manifests");
}

void ModelRegistry::update_measurements(const std::string& name, const std::string& version, double prefill_tps,
                                        double decode_tps, std::optional<double> task_score) {
  Lock lock(root_);
  auto m = get(name, version);
  require(m.has_value(), ErrorCode::kInvalidArgument,
          [&] { return "model '" + name + "@" + version + "' is not installed"; });
  m->prefill_tokens_per_second = prefill_tps;
  m->decode_tokens_per_second = decode_tps;
  if (task_score) m->task_score = task_score;
  write_file_atomic(root_ + "/manifests/" + m->key() + ".json", m->to_json().dump(2) + "\n");
}

ModelManifest ModelRegistry::record_task_scores(const std::string& name, const std::string& version,
                                               const std::vector<TaskScore>& scores) {
  Lock lock(root_);
  auto m = get(name, version);
  require(m.has_value(), ErrorCode::kInvalidArgument,
          [&] { return "model '" + name + "@" + version + "' is not installed"; });
  m->record_task_scores(scores);
  write_file_atomic(root_ + "/manifests/" + m->key() + ".json", m->to_json().dump(2) + "\n");
  return *m;
}

}  // namespace edgellm
